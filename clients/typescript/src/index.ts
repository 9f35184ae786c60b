export { ContextSynth, type CallOptions, type ContextSynthOptions } from "./client.js";
export { ContextSynthError } from "./errors.js";
export { retryAfterMs, RetryPolicy, type RetryOptions } from "./retry.js";
export type * from "./types.js";
