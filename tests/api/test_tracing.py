"""Tracing through the app: each request a server span, with the engine's plan and
finish, the LLM call, Redis commands, the upstream call and webhook deliveries under
or linked to it, into an in-memory exporter handed to ``create_app``; and, off, no span
and nothing of the SDK's tracing."""

import asyncio
import subprocess
import sys
import textwrap
import uuid

import pytest
import respx
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_ON
from opentelemetry.trace import SpanKind, StatusCode
from prometheus_client import CollectorRegistry

from app.main import create_app
from app.settings import Settings
from tests.api.test_deep import PROVIDER, URL, completion
from tests.conftest import ROOT, serve
from tests.support.build import coding_run
from tests.support.fake_upstream import FakeUpstream, Scripted
from tests.support.receiver import SECRET, Receiver

pytestmark = pytest.mark.anyio
# A database of its own on the shared Redis: keys are content hashes, and still.
REDIS = "redis://127.0.0.1:6379/6"
CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
CALLER = f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"


@pytest.fixture
def exporter():
    return InMemorySpanExporter()


@pytest.fixture
def traced(encoder, exporter):
    """An app whose spans go to ``exporter``, as each is ended."""
    provider = TracerProvider(sampler=ALWAYS_ON)
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    def make(**settings):
        return create_app(Settings(**settings), registry=CollectorRegistry(), encoder=encoder,
                          discover=lambda: [], environ={}, tracer_provider=provider)
    yield make
    provider.shutdown()


def named(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name == name]


def one(exporter: InMemorySpanExporter, name: str) -> ReadableSpan:
    [found] = named(exporter, name)
    return found


def children(exporter: InMemorySpanExporter, parent: ReadableSpan) -> list[ReadableSpan]:
    return sorted((s for s in exporter.get_finished_spans()
                   if s.parent is not None and s.parent.span_id == parent.context.span_id),
                  key=lambda s: s.start_time)


def unique_run(**extra):
    """A transcript no other test sends: its cache keys are its own."""
    messages = coding_run(12, **extra)
    messages[1] = {**messages[1], "content": f"{messages[1]['content']} ({uuid.uuid4()})"}
    return messages


@respx.mock
async def test_a_synthesis_is_a_server_span_over_plan_llm_call_and_finish(traced, exporter):
    respx.post(URL).respond(200, json=completion())
    app = traced(llm_providers=[PROVIDER], llm_retries=1)
    async with serve(app) as c:
        r = await c.post("/synthesize", headers={"x-request-id": "trace-test-1"}, json={
            "messages": unique_run(output_chars=3000), "reasoning": {"synthesis": "deep"}})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["mode"] == "deep"
    server = one(exporter, "POST /synthesize")
    assert server.kind == SpanKind.SERVER and server.parent is None
    stats = body["stats"]
    assert {k: server.attributes[k] for k in (
        "http.route", "http.response.status_code", "contextsynth.request_id",
        "contextsynth.tenant", "contextsynth.mode", "contextsynth.tokens_before",
        "contextsynth.tokens_after")} == {
        "http.route": "/synthesize", "http.response.status_code": 200,
        "contextsynth.request_id": "trace-test-1", "contextsynth.tenant": "default",
        "contextsynth.mode": "deep", "contextsynth.tokens_before": stats["tokens_before"],
        "contextsynth.tokens_after": stats["tokens_after"]}
    # The engine plans, the LLM answers, the engine finishes: in that order, one trace.
    plan, llm, finish = children(exporter, server)
    assert [plan.name, llm.name, finish.name] == [
        "plan synthesize", "chat gpt-4o-mini", "finish synthesize"]
    assert plan.end_time <= llm.start_time and llm.end_time <= finish.start_time
    assert {s.context.trace_id for s in (plan, llm, finish)} == {server.context.trace_id}
    assert plan.attributes["contextsynth.llm_planned"] is True
    assert llm.kind == SpanKind.CLIENT
    assert {k: llm.attributes[k] for k in ("gen_ai.request.model", "gen_ai.usage.input_tokens",
                                           "gen_ai.usage.output_tokens",
                                           "contextsynth.llm.provider")} == {
        "gen_ai.request.model": "gpt-4o-mini", "gen_ai.usage.input_tokens": 900,
        "gen_ai.usage.output_tokens": 60, "contextsynth.llm.provider": "main"}
    assert {k: finish.attributes[k] for k in (
        "contextsynth.job", "contextsynth.mode", "contextsynth.tier",
        "contextsynth.tokens_before", "contextsynth.tokens_after",
        "contextsynth.llm_reply")} == {
        "contextsynth.job": "synthesize", "contextsynth.mode": "deep",
        "contextsynth.tier": body["tier"], "contextsynth.tokens_before": stats["tokens_before"],
        "contextsynth.tokens_after": stats["tokens_after"], "contextsynth.llm_reply": "fresh"}


@respx.mock
async def test_a_failed_llm_call_is_an_error_span_and_the_finish_says_so(traced, exporter):
    respx.post(URL).respond(400, json={"error": "no"})
    async with serve(traced(llm_providers=[PROVIDER], llm_retries=1)) as c:
        r = await c.post("/synthesize", json={"messages": unique_run(output_chars=3000),
                                              "reasoning": {"synthesis": "deep"}})
    assert r.json()["degraded"]
    llm = one(exporter, "chat gpt-4o-mini")
    assert llm.status.status_code == StatusCode.ERROR
    assert [e.name for e in llm.events] == ["exception"]
    assert one(exporter, "finish synthesize").attributes["contextsynth.llm_reply"] == "failed"


async def test_a_callers_traceparent_is_the_parent_of_the_server_span(traced, exporter):
    async with serve(traced()) as c:
        r = await c.post("/synthesize", json={"messages": coding_run(6)},
                         headers={"traceparent": CALLER})
        assert r.status_code == 200
        await c.post("/synthesize", json={"messages": coding_run(6)})  # no trace sent
    joined, own = named(exporter, "POST /synthesize")
    assert f"{joined.context.trace_id:032x}" == CALLER_TRACE
    assert joined.parent is not None and joined.parent.is_remote
    assert f"{joined.parent.span_id:016x}" == CALLER_SPAN
    assert {s.context.trace_id for s in children(exporter, joined)} == {joined.context.trace_id}
    # Without one, the request begins a trace of its own.
    assert own.parent is None and f"{own.context.trace_id:032x}" != CALLER_TRACE


async def test_a_proxied_request_sends_its_upstream_spans_trace_context(traced, exporter):
    with FakeUpstream() as upstream:
        async with serve(traced(proxy_openai_url=f"{upstream.url}/v1")) as c:
            sent = {"model": "gpt-4o-mini", "messages": coding_run(6)}
            r = await c.post("/v1/chat/completions", json=sent,
                             headers={"traceparent": CALLER, "authorization": "Bearer sk-t"})
            assert r.status_code == 200, r.text
            upstream.script.append(Scripted(429, {"error": {"message": "slow down"}},
                                            {"retry-after": "1"}))
            refused = await c.post("/v1/chat/completions", json=sent,
                                   headers={"authorization": "Bearer sk-t"})
            assert refused.status_code == 429
    first, second = named(exporter, "POST /v1/chat/completions")
    call, refusal = named(exporter, "upstream openai")
    assert call.kind == SpanKind.CLIENT
    assert call.parent is not None and call.parent.span_id == first.context.span_id
    assert {k: call.attributes[k] for k in (
        "contextsynth.upstream", "http.request.method", "url.full",
        "http.response.status_code")} == {
        "contextsynth.upstream": "openai", "http.request.method": "POST",
        "url.full": f"{upstream.url}/v1/chat/completions", "http.response.status_code": 200}
    # In GenAI's names too: a tracing backend's LLM views find the call and its model.
    assert (call.attributes["gen_ai.provider.name"], call.attributes["gen_ai.request.model"]) \
        == ("openai", "gpt-4o-mini")
    # The provider sees this service's span as its caller, in the caller's trace.
    got = upstream.received[0].headers["traceparent"]
    assert got == f"00-{CALLER_TRACE}-{call.context.span_id:016x}-01"  # sampled, as sent
    assert {k: first.attributes[k] for k in ("contextsynth.upstream",
                                             "contextsynth.upstream.status_code")} == {
        "contextsynth.upstream": "openai", "contextsynth.upstream.status_code": 200}
    # The compaction ran under the same server span.
    assert [s.name for s in children(exporter, first)] == [
        "plan synthesize", "finish synthesize", "upstream openai"]
    # A provider's refusal is the client span's error, not the server's.
    assert refusal.status.status_code == StatusCode.ERROR
    assert refusal.attributes["error.type"] == "429"
    assert second.attributes["contextsynth.upstream.status_code"] == 429
    assert upstream.received[1].headers["traceparent"].split("-")[2] == \
        f"{refusal.context.span_id:016x}"


async def test_a_proxied_calls_upstream_span_carries_the_usage_its_answer_reported(
        traced, exporter):
    """Streamed or not: the client span lasts until the answer's body is read, and has the
    provider's token counts in GenAI's names (Anthropic's stream gives the input tokens
    in its first event and the output in its last)."""
    with FakeUpstream() as upstream:
        app = traced(proxy_openai_url=f"{upstream.url}/v1",
                     proxy_anthropic_url=upstream.url)
        async with serve(app) as c:
            r = await c.post("/v1/chat/completions", headers={"authorization": "Bearer sk-t"},
                             json={"model": "gpt-4o-mini", "messages": coding_run(6)})
            assert r.status_code == 200, r.text
            messages = [m for m in coding_run(6) if m["role"] != "system"]
            async with c.stream("POST", "/v1/messages", headers={"x-api-key": "sk-ant-t"},
                                json={"model": "claude-sonnet-4-5", "max_tokens": 64,
                                      "stream": True, "messages": messages[:1]}) as streamed:
                assert streamed.status_code == 200
                text = b"".join([chunk async for chunk in streamed.aiter_bytes()])
            assert b"message_stop" in text
    usage = {"gen_ai.usage.input_tokens": 100, "gen_ai.usage.output_tokens": 10}
    chat = one(exporter, "upstream openai")
    assert {k: chat.attributes[k] for k in usage} == usage
    message = one(exporter, "upstream anthropic")
    assert {k: message.attributes[k] for k in usage} == usage
    assert message.attributes["gen_ai.request.model"] == "claude-sonnet-4-5"
    # The span is the call's whole time: it ends after the last event was relayed, within
    # the request's server span.
    server = one(exporter, "POST /v1/messages")
    assert message.parent is not None and message.parent.span_id == server.context.span_id
    assert message.end_time <= server.end_time


@respx.mock
async def test_redis_commands_of_a_request_are_its_spans(traced, exporter):
    respx.post(URL).respond(200, json=completion())
    app = traced(llm_providers=[PROVIDER], llm_retries=1, redis_url=REDIS)
    async with serve(app) as c:
        r = await c.post("/synthesize", json={"messages": unique_run(output_chars=3000),
                                              "reasoning": {"synthesis": "deep"}})
        assert r.status_code == 200 and not r.json()["cache"]["hit"]
        server = one(exporter, "POST /synthesize")
        commands = [s for s in children(exporter, server) if s.kind == SpanKind.CLIENT
                    and s.attributes.get("db.system.name") == "redis"]
        # Outside a request a command is not traced (the outbox's polls would each be
        # a trace of their own).
        before = len(exporter.get_finished_spans())
        await app.state.services.cache.get("cs:v2:nobody:none")
        assert len(exporter.get_finished_spans()) == before
    names = [s.name for s in commands]
    # The cache lookup first; the single-flight lock, the reply stored, the lock let go.
    assert names[0] == "GET" and {"SET", "DEL"} <= set(names), names
    for command in commands:
        assert {k: command.attributes[k] for k in ("server.address", "server.port",
                                                   "db.namespace")} == {
            "server.address": "127.0.0.1", "server.port": 6379, "db.namespace": "6"}
        assert command.attributes["db.operation.name"] == command.name
        # Keys name tenants and values hold transcripts: neither is on a span.
        assert not any("cs:v2" in str(v) for v in command.attributes.values())


async def test_a_webhook_delivery_is_a_span_linked_to_its_request(traced, exporter):
    with Receiver() as receiver:
        app = traced(webhooks=[{"url": receiver.url, "secret": SECRET}],
                     webhooks_allow_private=True)
        async with serve(app) as c:
            r = await c.post("/synthesize", json={"messages": coding_run(6)})
            assert r.status_code == 200
            for _ in range(200):
                if named(exporter, "webhook context.synthesized"):
                    break
                await asyncio.sleep(0.05)
    server = one(exporter, "POST /synthesize")
    delivery = one(exporter, "webhook context.synthesized")
    # A trace of its own (a retry may come hours later), linked to the request's span.
    assert delivery.kind == SpanKind.CLIENT and delivery.parent is None
    assert [(link.context.trace_id, link.context.span_id) for link in delivery.links] == [
        (server.context.trace_id, server.context.span_id)]
    assert {k: delivery.attributes[k] for k in (
        "contextsynth.event.type", "contextsynth.webhook.attempt",
        "http.response.status_code", "contextsynth.webhook.outcome")} == {
        "contextsynth.event.type": "context.synthesized", "contextsynth.webhook.attempt": 1,
        "http.response.status_code": 204, "contextsynth.webhook.outcome": "delivered"}
    assert receiver.events[0]["type"] == "context.synthesized"
    # The receiver may join the delivery's trace.
    assert receiver.headers[0]["traceparent"].split("-")[1:3] == [
        f"{delivery.context.trace_id:032x}", f"{delivery.context.span_id:016x}"]


async def test_probes_and_scrapes_are_not_traced(traced, exporter):
    async with serve(traced()) as c:
        for path in ("/healthz", "/readyz", "/metrics"):
            assert (await c.get(path)).status_code == 200
    assert exporter.get_finished_spans() == ()


async def test_off_a_callers_traceparent_goes_upstream_as_it_came(make_app):
    with FakeUpstream() as upstream:
        async with serve(make_app(proxy_openai_url=f"{upstream.url}/v1")) as c:
            sent = {"model": "gpt-4o-mini", "messages": coding_run(6)}
            await c.post("/v1/chat/completions", json=sent, headers={"traceparent": CALLER})
            await c.post("/v1/chat/completions", json=sent)
    assert upstream.received[0].headers["traceparent"] == CALLER
    assert "traceparent" not in upstream.received[1].headers


def test_off_no_span_is_made_and_the_sdks_tracing_is_never_loaded():
    """In a process of its own: off, serving requests loads nothing of the SDK's
    tracing; and even with a global SDK provider (some library's), nothing reaches it."""
    script = textwrap.dedent("""
        import asyncio, sys
        import httpx
        from prometheus_client import CollectorRegistry
        from opentelemetry import trace
        from app.main import create_app
        from app.settings import Settings
        from tests.support.build import coding_run

        async def serve_two():
            app = create_app(Settings(), registry=CollectorRegistry(), environ={})
            async with app.router.lifespan_context(app):
                async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                             base_url="http://test") as c:
                    for _ in range(2):
                        r = await c.post("/synthesize", json={"messages": coding_run(6)},
                                         headers={"traceparent": "CALLER"})
                        assert r.status_code == 200, r.text

        asyncio.run(serve_two())
        assert "opentelemetry.sdk.trace" not in sys.modules
        assert type(trace.get_tracer_provider()).__name__ == "ProxyTracerProvider"

        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
            InMemorySpanExporter)
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        asyncio.run(serve_two())
        assert exporter.get_finished_spans() == (), exporter.get_finished_spans()
        print("no spans")
    """).replace("CALLER", CALLER)
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "no spans"
