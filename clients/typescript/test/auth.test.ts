/** A service with API keys: the client sends its key as a bearer token. */

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { ContextSynth, ContextSynthError } from "@contextsynth/client";

import { CODING_RUN, KEYED_KEY, KEYED_URL, needsKeyedService, transcript } from "./support.js";

describe("API keys", { skip: needsKeyedService }, () => {
  const baseUrl = KEYED_URL ?? "";
  const messages = transcript(CODING_RUN);

  test("with its key, a caller's jobs and handles are served", async () => {
    const sent: Headers[] = [];
    const client = new ContextSynth({
      baseUrl, apiKey: KEYED_KEY ?? "",
      fetch: (input, init) => {
        sent.push(new Headers(init?.headers));
        return fetch(input, init);
      },
    });
    const answer = await client.synthesize({ messages });
    const [span] = answer.receipt.dropped;
    assert.ok(span !== undefined);
    assert.equal((await client.expand(span.handle)).handle, span.handle);
    assert.deepEqual(sent.map((h) => h.get("authorization")),
                     [`Bearer ${KEYED_KEY}`, `Bearer ${KEYED_KEY}`]);
  });

  test("a call's own Authorization header replaces the client's key", async () => {
    const client = new ContextSynth({ baseUrl, apiKey: "not-the-key" });
    const headers = { Authorization: `Bearer ${KEYED_KEY}` };
    const answer = await client.synthesize({ messages }, { headers });
    assert.equal(answer.stats.messages_before, messages.length);
  });

  for (const [name, apiKey] of [["no key", undefined], ["a wrong key", "not-the-key"]] as const) {
    test(`with ${name}, a call is a 401 problem`, async () => {
      const client = new ContextSynth({ baseUrl, apiKey });
      await assert.rejects(client.synthesize({ messages }), (error: unknown) => {
        assert.ok(error instanceof ContextSynthError);
        assert.equal(error.status, 401);
        assert.equal(error.problem.status, 401);
        assert.match(error.problem.type, /^urn:contextsynth:problem:/);
        return true;
      });
    });
  }
});
