/** Every job of the API, called through the client against a running service with real
 * transcripts from the corpus. */

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { ContextSynth } from "@contextsynth/client";

import {
  actions, CODING_RUN, needsLLM, needsService, SERVICE_URL, SUPPORT_CHAT, toolCalls, transcript,
} from "./support.js";

describe("jobs", { skip: needsService }, () => {
  const client = new ContextSynth({ baseUrl: SERVICE_URL ?? "", timeoutMs: 120_000 });
  const coding = transcript(CODING_RUN);
  const chat = transcript(SUPPORT_CHAT);

  test("synthesize compacts a coding run, and expand gives back what it dropped", async () => {
    const answer = await client.synthesize({ messages: coding,
                                             reasoning: { synthesis: "fast" } });
    assert.equal(answer.format, "openai");
    assert.equal(answer.compacted, true);
    assert.ok((answer.messages ?? []).length < coding.length);
    assert.ok(answer.stats.tokens_after < answer.stats.tokens_before);
    assert.equal(answer.stats.messages_before, coding.length);
    const [span] = answer.receipt.dropped;
    assert.ok(span !== undefined, "a compacted run has dropped spans");

    const expanded = await client.expand(span.handle);
    assert.equal(expanded.handle, span.handle);
    assert.deepEqual(expanded.messages, coding.slice(span.first, span.last + 1));
  });

  test("compress-history summarizes the older part of a long chat", async () => {
    const answer = await client.compressHistory({ messages: coding, mode: "fast" });
    assert.equal(answer.compressed, true);
    assert.equal(answer.stats.messages_before, coding.length);
    assert.ok(answer.stats.messages_after < coding.length);
    assert.ok(answer.receipt.dropped.length > 0);
    // The system message and the task are kept as they were.
    assert.deepEqual(answer.messages?.slice(0, 2), coding.slice(0, 2));
  });

  test("summarize-trace groups a run's older actions by tool", async () => {
    const trace = actions(coding);
    const answer = await client.summarizeTrace({ actions: trace, mode: "fast" });
    assert.equal(answer.stats.actions_total, trace.length);
    assert.ok(answer.stats.actions_summarized > 0);
    assert.ok(answer.groups.some((group) => group.tool === "bash"));
    assert.ok(answer.recent.length > 0 && answer.recent.length < trace.length);
    // Its handle gives back the actions it summarized, as they were sent.
    const [span] = answer.receipt.dropped;
    assert.ok(span !== undefined);
    const expanded = await client.expand(span.handle);
    assert.deepEqual(expanded.actions, trace.slice(span.first, span.last + 1));
  });

  test("rescue builds its prompt from the evidence (dry run, no LLM)", async () => {
    const answer = await client.rescue({
      messages: chat, question: "Which reservations did the agent look at?", dry_run: true,
    });
    assert.equal(answer.dry_run, true);
    assert.equal(answer.answer, null);
    const prompt = JSON.stringify(answer.prompt);
    assert.match(prompt, /Which reservations did the agent look at\?/);
    assert.match(prompt, /JG7FMM/);  // a reservation the agent read in the chat
  });

  test("rescue answers the user through the service's LLM", { skip: needsLLM }, async () => {
    const answer = await client.rescue({
      messages: chat, question: "Which reservations did the agent look at?",
    });
    assert.equal(answer.dry_run, false);
    assert.ok(typeof answer.answer === "string" && answer.answer.length > 0);
    assert.ok(answer.llm !== null && answer.llm !== undefined);
    assert.equal(answer.prompt ?? null, null);
  });

  test("summarize-recall answers from memories, citing them", async () => {
    const memories = chat
      .filter((m) => m.role === "tool" && typeof m.content === "string" && m.content !== "")
      .map((m, i) => ({ id: `tool-${i}`, text: String(m.content) }));
    const answer = await client.summarizeRecall({
      query: "What reservations does Omar Davis have?", memories, mode: "extractive",
    });
    assert.equal(answer.refused, false);
    assert.ok(answer.citations.length > 0);
    const ids = new Set(memories.map((m) => m.id));
    for (const citation of answer.citations) assert.ok(ids.has(citation.memory_id));
    assert.match(answer.summary, /JG7FMM/);
  });

  test("reflect turns an iteration's tool calls into a record", async () => {
    const calls = toolCalls(chat).slice(0, 6);
    const answer = await client.reflect({
      goal: String(chat[1]?.content), tool_calls: calls, mode: "fast",
    });
    assert.equal(answer.record.mode, "fast");
    assert.deepEqual(answer.record.calls.map((c) => c.tool), calls.map((c) => c.tool));
    assert.ok(answer.record.calls.every((c) => c.insights.length > 0));
  });

  test("healthz, readyz and metrics", async () => {
    assert.equal((await client.healthz()).status, "ok");
    assert.equal((await client.readyz()).status, "ready");
    // The jobs above were counted.
    assert.match(await client.metrics(), /^contextsynth_\w+/m);
  });
});
