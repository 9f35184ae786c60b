/** What the tests share: where the services are, and real transcripts from the corpus. */

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import type { ReflectRequest, SummarizeTraceRequest } from "@contextsynth/client";

/** A service to call (`CONTEXTSYNTH_URL`), and one that has API keys configured
 * (`CONTEXTSYNTH_KEYED_URL`) with a key it accepts (`CONTEXTSYNTH_KEYED_KEY`). */
export const SERVICE_URL = process.env["CONTEXTSYNTH_URL"];
export const KEYED_URL = process.env["CONTEXTSYNTH_KEYED_URL"];
export const KEYED_KEY = process.env["CONTEXTSYNTH_KEYED_KEY"];

/** For a test that needs a service: false when it is there, else why it is skipped. */
export const needsService = SERVICE_URL === undefined
  ? "set CONTEXTSYNTH_URL to a running contextsynth service" : false;
/** Whether the service at CONTEXTSYNTH_URL has an LLM provider (`CONTEXTSYNTH_LLM=1`). */
export const needsLLM = process.env["CONTEXTSYNTH_LLM"] === "1" ? false
  : "set CONTEXTSYNTH_LLM=1 when the service at CONTEXTSYNTH_URL has an LLM provider";
/** Whether that service proxies /v1 to an OpenAI-compatible upstream
 * (`CONTEXTSYNTH_PROXY=1`). */
export const needsProxy = process.env["CONTEXTSYNTH_PROXY"] === "1" ? false
  : "set CONTEXTSYNTH_PROXY=1 when the service at CONTEXTSYNTH_URL has an OpenAI upstream";
export const needsKeyedService = KEYED_URL === undefined || KEYED_KEY === undefined
  ? "set CONTEXTSYNTH_KEYED_URL and CONTEXTSYNTH_KEYED_KEY to a service with API keys" : false;

const CORPUS = process.env["CONTEXTSYNTH_CORPUS"] ??
  fileURLToPath(new URL("../../../corpus/transcripts", import.meta.url));

/** A long coding run: tool calls (bash) with their results, 152 messages. */
export const CODING_RUN = "minisweagent-ds-chat-dev-pylint-dev__astroid-1866.jsonl";
/** A customer-support chat: tool calls to an airline's API, 62 messages. */
export const SUPPORT_CHAT = "tau-airline-gpt4o-task002-trial1.jsonl";

export type Message = { role: string; content?: unknown; [key: string]: unknown };
type ToolCall = { id: string; function: { name: string; arguments: string } };

/** A transcript of the corpus (OpenAI Chat Completions messages, one a line). */
export function transcript(name: string): Message[] {
  return readFileSync(join(CORPUS, name), "utf8").split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as Message);
}

type Call = { name: string; input: string; output: string; thought: string | undefined };

/** Each tool call of a transcript with its result. Ids repeat within a run in the
 * corpus, so a result answers the nearest earlier call of its id still unanswered. */
function calls(messages: Message[]): Call[] {
  const found: Call[] = [];
  const waiting = new Map<string, Call[]>();
  for (const message of messages) {
    if (message.role === "tool") {
      const call = waiting.get(String(message["tool_call_id"]))?.pop();
      const output = typeof message.content === "string" ? message.content : "";
      if (call !== undefined) call.output = output;
      continue;
    }
    if (message.role !== "assistant") continue;
    let thought = typeof message.content === "string" ? message.content : undefined;
    for (const toolCall of (message["tool_calls"] as ToolCall[] | undefined) ?? []) {
      const call = { name: toolCall.function.name, input: toolCall.function.arguments, output: "",
                     thought };
      found.push(call);
      waiting.set(toolCall.id, [...(waiting.get(toolCall.id) ?? []), call]);
      thought = undefined;  // the text goes with the first call it preceded
    }
  }
  return found;
}

/** A transcript's tool calls as a ReAct trace, for /summarize-trace. */
export function actions(messages: Message[]): NonNullable<SummarizeTraceRequest["actions"]> {
  return calls(messages).map((call) => ({
    action: call.name, action_input: call.input, observation: call.output, outcome: null,
    thought: call.thought ?? null,
  }));
}

/** A transcript's tool calls as one iteration's calls, for /reflect. */
export function toolCalls(messages: Message[]): ReflectRequest["tool_calls"] {
  return calls(messages).map((call) => ({
    tool: call.name, params: JSON.parse(call.input) as Record<string, unknown>,
    output: call.output,
  }));
}
