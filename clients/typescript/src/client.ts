import { Deadline } from "./deadline.js";
import { ContextSynthError } from "./errors.js";
import { RetryPolicy, type RetryOptions, sleep } from "./retry.js";
import type {
  AnswerOf, BodyOf, CompressHistoryRequest, CompressHistoryResponse, ExpandResponse, Health,
  OperationAt, paths, PathsWith, ProxyReceipt,
  ReflectRequest, ReflectResponse, RescueRequest, RescueResponse, SummarizeRecallRequest,
  SummarizeRecallResponse, SummarizeTraceRequest, SummarizeTraceResponse, SynthesizeRequest,
  SynthesizeResponse,
} from "./types.js";

export interface ContextSynthOptions {
  /** Where the service is (default `http://localhost:8080`); a path prefix is kept. */
  baseUrl?: string | undefined;
  /** Sent as `Authorization: Bearer <key>`, for a service with API keys configured. */
  apiKey?: string | undefined;
  /** How long one attempt may take, body included (default 60 000 ms). */
  timeoutMs?: number | undefined;
  /** When 429 and 503 answers are tried again. */
  retry?: RetryOptions | undefined;
  /** The fetch to call (default: the platform's); tests and proxies pass their own. */
  fetch?: typeof fetch | undefined;
  /** Headers sent with every call. */
  headers?: Record<string, string> | undefined;
}

export interface CallOptions {
  /** Aborts the call, waits between retries included. */
  signal?: AbortSignal | undefined;
  /** Headers for this call only (an `X-Request-ID`, say). */
  headers?: Record<string, string> | undefined;
  /** This call's own per-attempt timeout. */
  timeoutMs?: number | undefined;
}

type Reader<T> = (response: Response) => Promise<T>;
const readJson = <T>(response: Response): Promise<T> => response.json() as Promise<T>;
const readText: Reader<string> = (response) => response.text();

type Job = PathsWith<"post">;
type JobBody<P extends Job> = BodyOf<OperationAt<P, "post">>;
type JobAnswer<P extends Job> = AnswerOf<OperationAt<P, "post">>;
type Read = PathsWith<"get">;
type ReadAnswer<P extends Read> = AnswerOf<OperationAt<P, "get">>;

/** A path of the spec with each `{name}` filled in. */
function route(template: keyof paths, params: Record<string, string> = {}): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new TypeError(`${template}: no value for {${name}}`);
    return encodeURIComponent(value);
  });
}

/** The contextsynth HTTP API: one method per operation, typed from openapi.yaml. A
 * non-2xx answer throws a {@link ContextSynthError} carrying its problem document. */
export class ContextSynth {
  readonly baseUrl: string;
  readonly #fetch: typeof fetch;
  readonly #headers: Record<string, string>;
  readonly #timeoutMs: number;
  readonly #retry: RetryPolicy;

  constructor(options: ContextSynthOptions = {}) {
    this.baseUrl = (options.baseUrl ?? "http://localhost:8080").replace(/\/+$/, "");
    // Bound, because a browser's fetch throws when called as another object's method.
    const platform = typeof globalThis.fetch === "function"
      ? globalThis.fetch.bind(globalThis) : undefined;
    const chosen = options.fetch ?? platform;
    if (chosen === undefined) {
      throw new TypeError("no fetch on this platform: pass one as options.fetch");
    }
    this.#fetch = chosen;
    this.#headers = { ...options.headers };
    if (options.apiKey !== undefined) this.#headers["authorization"] = `Bearer ${options.apiKey}`;
    this.#timeoutMs = options.timeoutMs ?? 60_000;
    this.#retry = new RetryPolicy(options.retry);
  }

  /** After each agent step: the transcript made compact, in its own wire format. */
  synthesize(body: SynthesizeRequest, options?: CallOptions): Promise<SynthesizeResponse> {
    return this.#post("/synthesize", body, options);
  }

  /** A long chat: older messages replaced by a sectioned summary. */
  compressHistory(body: CompressHistoryRequest,
                  options?: CallOptions): Promise<CompressHistoryResponse> {
    return this.#post("/compress-history", body, options);
  }

  /** A ReAct action trace: older actions grouped by tool, recent ones in full. */
  summarizeTrace(body: SummarizeTraceRequest,
                 options?: CallOptions): Promise<SummarizeTraceResponse> {
    return this.#post("/summarize-trace", body, options);
  }

  /** An agent out of steps: an answer from the evidence it gathered. */
  rescue(body: RescueRequest, options?: CallOptions): Promise<RescueResponse> {
    return this.#post("/rescue", body, options);
  }

  /** Recalled memories made into one short answer with checked citations. */
  summarizeRecall(body: SummarizeRecallRequest,
                  options?: CallOptions): Promise<SummarizeRecallResponse> {
    return this.#post("/summarize-recall", body, options);
  }

  /** One iteration's tool calls made into insights and a progress verdict. */
  reflect(body: ReflectRequest, options?: CallOptions): Promise<ReflectResponse> {
    return this.#post("/reflect", body, options);
  }

  /** The original messages (or actions) a compaction replaced, by a receipt's handle. */
  expand(handle: string, options?: CallOptions): Promise<ExpandResponse> {
    return this.#get("/expand/{handle}", { handle }, options);
  }

  /** What a request sent through proxy mode dropped, by the id in its answer's
   * `x-contextsynth-receipt` or `x-contextsynth-request-id` header. */
  receipt(id: string, options?: CallOptions): Promise<ProxyReceipt> {
    const path = `/v1/contextsynth/receipts/${encodeURIComponent(id)}`;
    return this.#send("GET", path, undefined, readJson<ProxyReceipt>, options);
  }

  /** Liveness: the process serves HTTP. */
  healthz(options?: CallOptions): Promise<Health> {
    return this.#get("/healthz", {}, options);
  }

  /** Readiness: the service's dependencies are usable. */
  readyz(options?: CallOptions): Promise<Health> {
    return this.#get("/readyz", {}, options);
  }

  /** The Prometheus exposition, as text. */
  metrics(options?: CallOptions): Promise<string> {
    return this.#send("GET", route("/metrics"), undefined, readText, options);
  }

  // Typed by the spec's own path: a job whose path, body or answer changes in
  // openapi.yaml no longer compiles here until its method follows.
  #post<P extends Job>(path: P, body: JobBody<P>,
                       options: CallOptions | undefined): Promise<JobAnswer<P>> {
    return this.#send("POST", route(path), JSON.stringify(body), readJson<JobAnswer<P>>,
                      options);
  }

  #get<P extends Read>(path: P, params: Record<string, string>,
                       options: CallOptions | undefined): Promise<ReadAnswer<P>> {
    return this.#send("GET", route(path, params), undefined, readJson<ReadAnswer<P>>,
                      options);
  }

  async #send<T>(method: string, path: string, body: string | undefined, read: Reader<T>,
                 options: CallOptions = {}): Promise<T> {
    for (let attempt = 0; ; attempt += 1) {
      try {
        return await this.#once(method, path, body, read, options);
      } catch (error) {
        const wait = error instanceof ContextSynthError
          ? this.#retry.delayMs(error.status, error.retryAfterMs, attempt) : undefined;
        if (wait === undefined) throw error;
        await sleep(wait, options.signal);
      }
    }
  }

  async #once<T>(method: string, path: string, body: string | undefined, read: Reader<T>,
                 options: CallOptions): Promise<T> {
    // Set one by one into Headers, so a name given twice in different cases replaces
    // rather than joins (a caller's "Authorization" over the apiKey's, say).
    const headers = new Headers({ accept: "application/json, application/problem+json" });
    if (body !== undefined) headers.set("content-type", "application/json");
    for (const [name, value] of [...Object.entries(this.#headers),
                                 ...Object.entries(options.headers ?? {})]) {
      headers.set(name, value);
    }
    const deadline = new Deadline(options.timeoutMs ?? this.#timeoutMs, options.signal);
    try {
      const init: RequestInit = { method, headers, signal: deadline.signal };
      if (body !== undefined) init.body = body;
      const response = await this.#fetch(this.baseUrl + path, init);
      if (!response.ok) throw await ContextSynthError.from(response);
      return await read(response);
    } finally {
      deadline.clear();
    }
  }
}
