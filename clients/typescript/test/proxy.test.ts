/** Proxy mode's receipts: an agent's SDK sends its request through the service, and the
 * client reads back what compaction dropped from it. */

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { ContextSynth, ContextSynthError } from "@contextsynth/client";

import { CODING_RUN, needsProxy, SERVICE_URL, transcript } from "./support.js";

describe("proxy receipts", { skip: needsProxy }, () => {
  const client = new ContextSynth({ baseUrl: SERVICE_URL ?? "" });

  test("a proxied request's receipt, by the ids its answer carries", async () => {
    // The run up to its last assistant turn, as an agent would send it next.
    const run = transcript(CODING_RUN);
    const messages = run.slice(0, run.map((m) => m.role).lastIndexOf("assistant"));
    const proxied = await fetch(`${SERVICE_URL}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer sk-provider" },
      body: JSON.stringify({ model: "gpt-4o-mini", messages }),
    });
    assert.equal(proxied.status, 200, await proxied.clone().text());
    await proxied.body?.cancel();
    const requestId = proxied.headers.get("x-contextsynth-request-id") ?? "";
    const receiptId = proxied.headers.get("x-contextsynth-receipt") ?? "";

    const receipt = await client.receipt(requestId);
    assert.equal(receipt.request_id, requestId);
    assert.equal(receipt.receipt_id, receiptId);
    assert.equal(receipt.tokens_before,
                 Number(proxied.headers.get("x-contextsynth-tokens-before")));
    assert.ok(receipt.tokens_after < receipt.tokens_before);
    assert.ok(receipt.receipt.dropped.length > 0);
    assert.deepEqual(await client.receipt(receiptId), receipt);

    // Its handles expand like any job's.
    const [span] = receipt.receipt.dropped;
    assert.ok(span !== undefined);
    assert.deepEqual((await client.expand(span.handle)).messages,
                     messages.slice(span.first, span.last + 1));
  });

  test("an id that was never proxied is a 404 problem", async () => {
    await assert.rejects(client.receipt("never-proxied"), (error: unknown) => {
      assert.ok(error instanceof ContextSynthError);
      assert.equal(error.status, 404);
      assert.equal(error.problem.type, "urn:contextsynth:problem:handle-not-found");
      return true;
    });
  });
});
