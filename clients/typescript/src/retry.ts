/** When a failed call is tried again: on 429 and 503 only (the service refused the work
 * before doing it, so sending it again is safe), after the wait its Retry-After asks for
 * (or a doubling backoff when it gives none), a bounded number of times. */

export interface RetryOptions {
  /** Tries after the first one (default 2); 0 turns retrying off. */
  retries?: number | undefined;
  /** The longest wait honoured (default 30 000 ms). An answer that asks for longer is
   * thrown at once: the caller is better placed to decide on a wait that long. */
  maxDelayMs?: number | undefined;
  /** The wait when an answer gives no `Retry-After` (default 500 ms), doubled at each
   * try. */
  backoffMs?: number | undefined;
}

const RETRYABLE: ReadonlySet<number> = new Set([429, 503]);

export class RetryPolicy {
  readonly retries: number;
  readonly maxDelayMs: number;
  readonly backoffMs: number;

  constructor(options: RetryOptions = {}) {
    this.retries = options.retries ?? 2;
    this.maxDelayMs = options.maxDelayMs ?? 30_000;
    this.backoffMs = options.backoffMs ?? 500;
  }

  /** The wait before try `attempt + 1` after a failure with `status` (`attempt`
   * counts from 0), or undefined when that failure is final. */
  delayMs(status: number, retryAfter: number | undefined, attempt: number): number | undefined {
    if (!RETRYABLE.has(status) || attempt >= this.retries) return undefined;
    const wait = retryAfter ?? this.backoffMs * 2 ** attempt;
    return wait <= this.maxDelayMs ? wait : undefined;
  }
}

/** `Retry-After` in milliseconds: delay-seconds or an HTTP date (RFC 9110, 10.2.3). */
export function retryAfterMs(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  // An HTTP date starts with the day's name; Date.parse alone takes "-1" for a year.
  if (!/^[A-Za-z]/.test(trimmed)) return undefined;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Waits `ms`; an abort of `signal` ends the wait with the abort's reason. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const stop = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", stop);
      resolve();
    }, ms);
    signal?.addEventListener("abort", stop, { once: true });
  });
}
