/** One attempt's signal: aborted when the attempt's time is up (with a `TimeoutError`,
 * as `AbortSignal.timeout` does) or when the caller's own signal aborts. Written out
 * rather than with `AbortSignal.any`, which Node only has from 20.3. */
export class Deadline {
  readonly signal: AbortSignal;
  readonly #controller = new AbortController();
  readonly #timer: ReturnType<typeof setTimeout> | undefined;
  readonly #outer: AbortSignal | undefined;
  readonly #follow = (): void => this.#controller.abort(this.#outer?.reason);

  constructor(timeoutMs: number, outer?: AbortSignal) {
    this.signal = this.#controller.signal;
    this.#outer = outer;
    // An infinite (or absurd) timeout is no timer: setTimeout wraps past 2^31 - 1 ms.
    if (Number.isFinite(timeoutMs) && timeoutMs < 2 ** 31) {
      this.#timer = setTimeout(() => this.#controller.abort(new DOMException(
        `contextsynth did not answer within ${timeoutMs} ms`, "TimeoutError")), timeoutMs);
    }
    if (outer?.aborted) this.#follow();
    else outer?.addEventListener("abort", this.#follow, { once: true });
  }

  /** Stops the timer and lets go of the caller's signal. */
  clear(): void {
    clearTimeout(this.#timer);
    this.#outer?.removeEventListener("abort", this.#follow);
  }
}
