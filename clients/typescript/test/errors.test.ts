/** A refused call throws a ContextSynthError carrying the service's problem document. */

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { ContextSynth, ContextSynthError } from "@contextsynth/client";

import { needsService, SERVICE_URL, SUPPORT_CHAT, transcript } from "./support.js";

/** The error a call threw; fails when it did not throw one. */
async function refusal(call: Promise<unknown>): Promise<ContextSynthError> {
  try {
    await call;
  } catch (error) {
    assert.ok(error instanceof ContextSynthError, `not a ContextSynthError: ${String(error)}`);
    return error;
  }
  assert.fail("the call succeeded");
}

describe("problem documents from the service", { skip: needsService }, () => {
  let calls = 0;
  const client = new ContextSynth({
    baseUrl: SERVICE_URL ?? "",
    fetch: (input, init) => {
      calls += 1;
      return fetch(input, init);
    },
  });

  test("a body that breaks the schema is a 422 naming the field", async () => {
    calls = 0;
    const headers = { "x-request-id": "ts-client-422" };
    const error = await refusal(client.synthesize({ messages: [] }, { headers }));
    assert.equal(error.status, 422);
    assert.equal(error.problem.status, 422);
    assert.equal(error.problem.type, "urn:contextsynth:problem:validation-error");
    assert.equal(error.problem.instance, "/synthesize");
    assert.deepEqual(error.problem.errors?.map((e) => e["pointer"]), ["/messages"]);
    // The id the caller sent ties the error to the service's logs.
    assert.equal(error.requestId, "ts-client-422");
    assert.equal(error.headers.get("content-type"), "application/problem+json");
    assert.match(error.message, /^422 The request does not match the schema: \/messages/);
    assert.equal(calls, 1, "a 422 is not tried again");
  });

  test("an option the service does not know is a 422 pointing at it", async () => {
    const error = await refusal(client.synthesize({ messages: transcript(SUPPORT_CHAT),
                                                    format: "klingon" }));
    assert.equal(error.problem.type, "urn:contextsynth:problem:unknown-format");
    assert.equal(error.problem.pointer, "/format");
    assert.match(error.problem.detail, /klingon/);
    assert.match(String(error.requestId), /^[0-9a-f]{32}$/);
  });

  test("a handle the service never gave is a 404", async () => {
    const error = await refusal(client.expand("cs_no such handle"));
    assert.equal(error.status, 404);
    assert.equal(error.problem.type, "urn:contextsynth:problem:handle-not-found");
    // The handle arrived whole, escaped into one path segment.
    assert.equal(error.problem.instance, "/expand/cs_no such handle");
    assert.match(error.problem.detail, /'cs_no such handle'/);
  });
});

test("an answer that is not a problem document gets a stand-in one", async () => {
  const client = new ContextSynth({
    baseUrl: "http://contextsynth.invalid",
    fetch: async () => new Response("<html>bad gateway</html>", {
      status: 502, statusText: "Bad Gateway", headers: { "content-type": "text/html" },
    }),
  });
  const error = await refusal(client.healthz());
  assert.equal(error.status, 502);
  assert.deepEqual(error.problem, {
    type: "about:blank", title: "Bad Gateway", status: 502,
    detail: "<html>bad gateway</html>",
  });
  assert.equal(error.requestId, undefined);
});
