/** 429 and 503 are tried again, after the wait the answer asks for, a bounded number of
 * times; other failures are thrown at once. The refusals come from an injected fetch: the
 * service only sends them under load. */

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { ContextSynth, ContextSynthError, retryAfterMs } from "@contextsynth/client";

import { needsService, SERVICE_URL, SUPPORT_CHAT, transcript } from "./support.js";

/** A refusal as the service words one. */
function refused(status: number, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify({
    type: "urn:contextsynth:problem:overloaded", title: "Overloaded", status,
    detail: "too many requests at once; retry after Retry-After seconds.",
  }), { status, headers: { "content-type": "application/problem+json", ...headers } });
}

/** A fetch that answers from `answers` in turn (the last one for ever after), counting
 * its calls; an answer of `undefined` passes the call on to the real fetch. */
function scripted(answers: (() => Response | undefined)[]) {
  const calls: number[] = [];
  const fake: typeof fetch = async (input, init) => {
    calls.push(performance.now());
    const answer = (answers[calls.length - 1] ?? answers[answers.length - 1])?.();
    return answer ?? fetch(input, init);
  };
  return { calls, fetch: fake };
}

async function rejection(call: Promise<unknown>): Promise<unknown> {
  try {
    await call;
  } catch (error) {
    return error;
  }
  assert.fail("the call succeeded");
}

describe("retries against the service", { skip: needsService }, () => {
  test("a 429 with Retry-After is waited out, then the job is served", async () => {
    const fake = scripted([() => refused(429, { "retry-after": "1" }), () => undefined]);
    const client = new ContextSynth({ baseUrl: SERVICE_URL ?? "", fetch: fake.fetch });
    const started = performance.now();
    const answer = await client.synthesize({ messages: transcript(SUPPORT_CHAT) });
    assert.equal(answer.format, "openai");
    assert.equal(fake.calls.length, 2);
    const [first = 0, second = 0] = fake.calls;
    assert.ok(second - first >= 990, `waited ${second - first} ms, not 1 s`);
    assert.ok(performance.now() - started < 10_000);
  });
});

describe("retries", () => {
  const baseUrl = "http://contextsynth.invalid";
  const ok = (): Response => Response.json({ status: "ok" });

  test("a 503 with an HTTP-date Retry-After waits until that time", async () => {
    // HTTP dates have whole seconds: two seconds ahead is between one and two from now.
    const when = new Date(Math.floor(Date.now() / 1000) * 1000 + 2000).toUTCString();
    const fake = scripted([() => refused(503, { "retry-after": when }), ok]);
    const client = new ContextSynth({ baseUrl, fetch: fake.fetch });
    assert.deepEqual(await client.healthz(), { status: "ok" });
    const [first = 0, second = 0] = fake.calls;
    assert.ok(second - first >= 990 && second - first < 2500, `waited ${second - first} ms`);
  });

  test("without Retry-After, the wait doubles from backoffMs", async () => {
    const fake = scripted([() => refused(503), () => refused(503), ok]);
    const client = new ContextSynth({ baseUrl, fetch: fake.fetch, retry: { backoffMs: 100 } });
    await client.healthz();
    const [a = 0, b = 0, c = 0] = fake.calls;
    assert.ok(b - a >= 95 && c - b >= 195, `waited ${b - a} then ${c - b} ms`);
  });

  test("the tries are bounded: the last refusal is thrown", async () => {
    const fake = scripted([() => refused(429, { "retry-after": "0" })]);
    const client = new ContextSynth({ baseUrl, fetch: fake.fetch, retry: { retries: 3 } });
    const error = await rejection(client.healthz());
    assert.ok(error instanceof ContextSynthError);
    assert.equal(error.status, 429);
    assert.equal(error.problem.type, "urn:contextsynth:problem:overloaded");
    assert.equal(fake.calls.length, 4);
  });

  test("a wait longer than maxDelayMs is not waited: the refusal is thrown", async () => {
    const fake = scripted([() => refused(503, { "retry-after": "120" }), ok]);
    const client = new ContextSynth({ baseUrl, fetch: fake.fetch });
    const error = await rejection(client.healthz());
    assert.ok(error instanceof ContextSynthError);
    assert.equal(error.retryAfterMs, 120_000);
    assert.equal(fake.calls.length, 1);
  });

  for (const status of [400, 401, 404, 422, 500, 502, 504]) {
    test(`a ${status} is not tried again`, async () => {
      const fake = scripted([() => refused(status, { "retry-after": "0" }), ok]);
      const client = new ContextSynth({ baseUrl, fetch: fake.fetch });
      const error = await rejection(client.healthz());
      assert.ok(error instanceof ContextSynthError && error.status === status);
      assert.equal(fake.calls.length, 1);
    });
  }

  test("retries: 0 turns retrying off", async () => {
    const fake = scripted([() => refused(429, { "retry-after": "0" }), ok]);
    const client = new ContextSynth({ baseUrl, fetch: fake.fetch, retry: { retries: 0 } });
    await rejection(client.healthz());
    assert.equal(fake.calls.length, 1);
  });

  test("the caller's signal ends a wait between tries", async () => {
    const fake = scripted([() => refused(429, { "retry-after": "20" }), ok]);
    const client = new ContextSynth({ baseUrl, fetch: fake.fetch });
    const started = performance.now();
    const error = await rejection(client.healthz({ signal: AbortSignal.timeout(100) }));
    assert.ok(error instanceof DOMException && error.name === "TimeoutError", String(error));
    assert.ok(performance.now() - started < 5000);
    assert.equal(fake.calls.length, 1);
  });

  // Bounded by the runner too: a client that lost its timeout would wait for ever here.
  test("an attempt unanswered in timeoutMs is a TimeoutError", { timeout: 10_000 }, async () => {
    const hangs: typeof fetch = (_, init) => new Promise((_resolve, reject) => {
      init?.signal?.addEventListener("abort", () => reject(init.signal?.reason));
    });
    const client = new ContextSynth({ baseUrl, fetch: hangs, timeoutMs: 100 });
    const error = await rejection(client.healthz());
    assert.ok(error instanceof DOMException && error.name === "TimeoutError", String(error));
    assert.match(error.message, /within 100 ms/);
  });
});

test("Retry-After is read as seconds or as an HTTP date", () => {
  const now = Date.parse("Tue, 01 Jul 2025 12:00:00 GMT");
  assert.equal(retryAfterMs("3", now), 3000);
  assert.equal(retryAfterMs(" 0 ", now), 0);
  assert.equal(retryAfterMs("Tue, 01 Jul 2025 12:00:05 GMT", now), 5000);
  assert.equal(retryAfterMs("Tue, 01 Jul 2025 11:00:00 GMT", now), 0);  // already past
  assert.equal(retryAfterMs("soon", now), undefined);
  assert.equal(retryAfterMs("-1", now), undefined);
  assert.equal(retryAfterMs(null, now), undefined);
});
