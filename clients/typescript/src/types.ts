/** Names for the generated types: each job's request and answer, taken from the
 * operation that serves it, so a spec that moves a job to another schema moves these. */

import type { components, operations, paths } from "./schema.js";

export type { components, operations, paths };

type JsonContent<T> = T extends { content: { "application/json": infer Body } } ? Body : never;

/** The JSON body an operation takes. */
export type BodyOf<Op> = Op extends { requestBody: infer Body } ? JsonContent<Body> : never;

/** The JSON body of an operation's 200 answer. */
export type AnswerOf<Op> = Op extends { responses: { 200: infer Ok } } ? JsonContent<Ok> : never;

/** The operation a path serves with a method (never when it does not). */
export type OperationAt<P extends keyof paths, M extends "get" | "post"> =
  paths[P] extends { [Method in M]: infer Op } ? Op : never;

/** The paths that serve a method. */
export type PathsWith<M extends "get" | "post"> = {
  [P in keyof paths]: paths[P] extends { [Method in M]: unknown } ? P : never;
}[keyof paths];

export type RequestOf<Op extends keyof operations> = BodyOf<operations[Op]>;
export type ResponseOf<Op extends keyof operations> = AnswerOf<operations[Op]>;

export type SynthesizeRequest = RequestOf<"synthesize">;
export type SynthesizeResponse = ResponseOf<"synthesize">;
export type CompressHistoryRequest = RequestOf<"compress_history">;
export type CompressHistoryResponse = ResponseOf<"compress_history">;
export type SummarizeTraceRequest = RequestOf<"summarize_trace">;
export type SummarizeTraceResponse = ResponseOf<"summarize_trace">;
export type RescueRequest = RequestOf<"rescue">;
export type RescueResponse = ResponseOf<"rescue">;
export type SummarizeRecallRequest = RequestOf<"summarize_recall">;
export type SummarizeRecallResponse = ResponseOf<"summarize_recall">;
export type ReflectRequest = RequestOf<"reflect">;
export type ReflectResponse = ResponseOf<"reflect">;
export type ExpandResponse = ResponseOf<"expand">;
export type Health = ResponseOf<"healthz">;

/** An RFC 9457 problem document as the service sends it: the spec's fields, and any
 * extension member beside them (`request_id`, `errors`...). */
export type Problem = components["schemas"]["Problem"] & { [extension: string]: unknown };

/** What a request sent through proxy mode dropped, from
 * `GET /v1/contextsynth/receipts/{id}`. Proxy routes are not in openapi.yaml (their
 * bodies are the providers' own), so this one type is written by hand, around the
 * spec's receipt. */
export interface ProxyReceipt {
  /** The request's id (its `x-contextsynth-request-id`). */
  request_id: string;
  /** The receipt's own id (its `x-contextsynth-receipt`), which no later request reuses. */
  receipt_id: string;
  mode: string;
  tokens_before: number;
  tokens_after: number;
  stable_messages: number;
  receipt: components["schemas"]["ReceiptOut"];
  /** Handles the model read back through the expand tool, when it was offered. */
  expanded?: string[];
  [other: string]: unknown;
}
