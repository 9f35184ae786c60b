import { retryAfterMs } from "./retry.js";
import type { Problem } from "./types.js";

/** An error answer from the service (or from whatever stands in front of it), with its
 * RFC 9457 problem document. A body that is not a problem document (a load balancer's
 * HTML page, say) is described by a stand-in document of type `about:blank`, so
 * callers read `error.problem` the same way whatever answered. */
export class ContextSynthError extends Error {
  override readonly name = "ContextSynthError";
  /** The HTTP status of the answer. */
  readonly status: number;
  /** The problem document the service sent. */
  readonly problem: Problem;
  /** The answer's headers (`x-request-id`, `retry-after`...). */
  readonly headers: Headers;

  constructor(problem: Problem, status: number, headers: Headers) {
    super(`${status} ${problem.title}: ${problem.detail}`);
    this.problem = problem;
    this.status = status;
    this.headers = headers;
  }

  /** The id that ties this failure to the service's logs and events. */
  get requestId(): string | undefined {
    const sent = this.problem["request_id"];
    return typeof sent === "string" ? sent : this.headers.get("x-request-id") ?? undefined;
  }

  /** How long the service asked the caller to wait before trying again, if it did. */
  get retryAfterMs(): number | undefined {
    return retryAfterMs(this.headers.get("retry-after"));
  }

  /** The error for a non-2xx answer; reads (and so consumes) its body. */
  static async from(response: Response): Promise<ContextSynthError> {
    const text = await response.text();
    return new ContextSynthError(asProblem(text, response), response.status, response.headers);
  }
}

function asProblem(text: string, response: Response): Problem {
  try {
    const parsed: unknown = JSON.parse(text);
    if (isProblem(parsed)) return parsed;
  } catch {
    // Not JSON: described below.
  }
  return {
    type: "about:blank",
    title: response.statusText || `HTTP ${response.status}`,
    status: response.status,
    detail: text.slice(0, 2000),
  };
}

function isProblem(value: unknown): value is Problem {
  if (typeof value !== "object" || value === null) return false;
  const fields = value as Record<string, unknown>;
  return typeof fields["type"] === "string" && typeof fields["title"] === "string" &&
    typeof fields["status"] === "number" && typeof fields["detail"] === "string";
}
