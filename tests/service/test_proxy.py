"""The proxy's sequence in process, against an upstream in memory (``MemoryUpstream``):
what it sends on, what it hands back, and how it fails, with no port or thread.
``tests/integration/test_proxy.py`` runs the same paths with the official SDKs over
loopback."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from prometheus_client import CollectorRegistry

from app.adapters.logs import JsonFormatter
from app.adapters.upstream import Slots
from app.adapters.upstream_memory import MemoryUpstream, Sent, UpstreamReply
from app.engine.errors import UpstreamFailed, UpstreamTimeout
from app.main import create_app
from app.settings import Settings
from tests.conftest import serve
from tests.support.build import coding_run

pytestmark = pytest.mark.anyio

KEY = "sk-caller-3b1d"
COMPLETION = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1,
              "model": "gpt-4o-mini", "choices": [{"index": 0, "finish_reason": "stop",
                                                   "message": {"role": "assistant",
                                                               "content": "Done."}}],
              "usage": {"prompt_tokens": 100, "completion_tokens": 2, "total_tokens": 102}}


def _completion(_: Sent) -> UpstreamReply:
    return UpstreamReply.json(COMPLETION, headers=[("x-request-id", "req_up_1"),
                                           ("x-ratelimit-remaining-tokens", "9000")])


@pytest.fixture
def make(encoder: Any) -> Callable[..., tuple[FastAPI, MemoryUpstream]]:
    def build(handler: Callable[[Sent], Any] = _completion, slots: Slots | None = None,
              **settings: Any) -> tuple[FastAPI, MemoryUpstream]:
        upstream = MemoryUpstream(handler, **({"slots": slots} if slots else {}))
        app = create_app(Settings(**settings), registry=CollectorRegistry(), encoder=encoder,
                         discover=lambda: [], environ={}, upstream=upstream)
        return app, upstream
    return build


async def test_the_compacted_conversation_goes_on_with_the_callers_headers(make):
    app, upstream = make(proxy_openai_url="https://api.example.test/v1")
    messages = coding_run(14, output_chars=3000)
    async with serve(app) as c:
        r = await c.post("/v1/chat/completions", json={"model": "gpt-4o-mini",
                                                       "messages": messages},
                         headers={"authorization": f"Bearer {KEY}", "openai-beta": "x=1",
                                  "x-contextsynth-mode": "fast"})
    assert r.status_code == 200, r.text
    assert r.json() == COMPLETION
    # The upstream's own headers come back; contextsynth's say what it did.
    assert r.headers["x-request-id"] == "req_up_1"
    assert r.headers["x-ratelimit-remaining-tokens"] == "9000"
    assert r.headers["x-contextsynth-compaction"] == "compacted"
    [sent] = upstream.sent
    assert sent.url == "https://api.example.test/v1/chat/completions"
    assert sent.header("authorization") == f"Bearer {KEY}"
    assert sent.header("openai-beta") == "x=1"
    assert sent.header("x-contextsynth-mode") is None  # ours stay here
    assert sent.header("host") is None  # hop-by-hop: set afresh by the transport
    forwarded = sent.json()
    assert forwarded["model"] == "gpt-4o-mini"
    assert len(forwarded["messages"]) < len(messages)
    assert upstream.finished == 1 and upstream.left == 0


async def test_a_stream_comes_back_event_by_event_and_is_read_to_its_end(make):
    events = [(None, {"choices": [{"index": 0, "delta": {"content": w}}]})
              for w in ("Booked", " HAT069")] + [(None, "[DONE]")]
    app, upstream = make(lambda _: UpstreamReply.events(events))
    async with serve(app) as c:
        r = await c.post("/v1/chat/completions", json={
            "model": "gpt-4o-mini", "stream": True,
            "messages": [{"role": "user", "content": "book it"}]})
    assert r.status_code == 200
    assert r.headers["content-type"] == "text/event-stream"
    assert r.text.count("data: ") == 3 and r.text.endswith("data: [DONE]\n\n")
    assert upstream.finished == 1


async def test_an_upstream_error_reaches_the_caller_as_the_provider_sent_it(make):
    limited = {"error": {"message": "Rate limit reached", "type": "requests",
                         "code": "rate_limit_exceeded"}}
    app, _ = make(lambda _: UpstreamReply.json(limited, status=429, headers=[("retry-after", "7")]))
    async with serve(app) as c:
        r = await c.post("/v1/chat/completions", json={
            "model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]})
    assert r.status_code == 429
    assert r.headers["retry-after"] == "7"
    assert r.json() == limited


@pytest.mark.parametrize(("raised", "status", "kind"), [
    (UpstreamFailed("openai could not be reached", upstream="openai"), 502,
     "upstream_unreachable"),
    (UpstreamTimeout("openai did not answer within 60 s.", upstream="openai"), 504,
     "upstream_timeout")])
async def test_an_upstream_that_cannot_answer_says_so_in_its_providers_shape(
        make, raised, status, kind):
    def fail(_: Sent) -> UpstreamReply:
        raise raised

    app, upstream = make(fail)
    async with serve(app) as c:
        r = await c.post("/v1/chat/completions", json={
            "model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]})
    assert r.status_code == status, r.text
    assert r.json()["error"]["code"] == kind
    # The slot the failed request took is free again.
    assert not upstream.slots._free.locked()


async def test_a_full_pool_answers_503_with_retry_after_and_never_sends(make):
    release = asyncio.Event()

    async def held(sent: Sent) -> UpstreamReply:
        if len(upstream.sent) == 1:
            await release.wait()  # the first request holds the only slot
        return _completion(sent)

    app, upstream = make(held, slots=Slots(1, 0, 1.0))
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
    async with serve(app) as c:
        first = asyncio.create_task(c.post("/v1/chat/completions", json=body))
        while not upstream.sent:
            await asyncio.sleep(0.01)
        second = await c.post("/v1/chat/completions", json=body)
        release.set()
        assert (await first).status_code == 200
    assert second.status_code == 503, second.text
    assert int(second.headers["retry-after"]) >= 1
    assert second.json()["error"]["type"]  # in the provider's error shape
    assert len(upstream.sent) == 1  # the refused one never reached the upstream


async def test_the_access_line_says_what_compaction_did_even_when_the_upstream_fails(
        make, caplog):
    def fail(_: Sent) -> UpstreamReply:
        raise UpstreamFailed("openai at https://api.example.test could not be reached")

    app, _ = make(fail)
    caplog.set_level(logging.INFO, logger="app.access")
    async with serve(app) as c:
        r = await c.post("/v1/chat/completions", json={
            "model": "gpt-4o-mini", "messages": coding_run(14, output_chars=3000)},
            headers={"x-contextsynth-mode": "fast"})
    assert r.status_code == 502
    [record] = [rec for rec in caplog.records if rec.name == "app.access"]
    line = json.loads(JsonFormatter().format(record))
    assert line["status"] == 502 and line["mode"] == "fast"
    assert line["tokens_in"] > line["tokens_out"] > 0


async def test_a_proxied_calls_access_line_names_the_provider_its_answer_and_the_model(
        make, caplog):
    app, _ = make()
    caplog.set_level(logging.INFO, logger="app.access")
    async with serve(app) as c:
        r = await c.post("/v1/chat/completions", json={
            "model": "gpt-4o-mini", "messages": coding_run(14, output_chars=3000)},
            headers={"x-contextsynth-mode": "fast"})
        await c.get("/healthz")
    assert r.status_code == 200
    lines = [json.loads(JsonFormatter().format(rec)) for rec in caplog.records
             if rec.name == "app.access"]
    proxied = next(line for line in lines if line["endpoint"] == "/v1/chat/completions")
    assert (proxied["upstream"], proxied["upstream_status"]) == ("openai", 200)
    assert proxied["upstream_request_id"] == "req_up_1"  # the provider's, for its logs
    assert proxied["model"] == "gpt-4o-mini"
    health = next(line for line in lines if line["endpoint"] == "/healthz")
    assert "upstream" not in health and "model" not in health


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "c", "object": "chat.completion.chunk", "model": "gpt-4o-mini",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


@pytest.mark.parametrize("eol", ["\r\n", "\r"])
async def test_a_stream_in_any_line_ending_cut_anywhere_reaches_the_client_event_by_event(
        make, eol):
    """An upstream whose CRLFs fall across reads, or that ends lines with CR alone (both
    as SSE allows): each event reaches the client before the upstream sends the next,
    and the proxy still finds the expand tool's call in them and answers it."""
    from app.service.expand_tool import NAME

    log: list[str] = []  # what happened, in order: upstream reads and client writes

    def reads(raw: bytes) -> Iterator[bytes]:
        # every read ends inside a blank line's line end, or right after a CR
        cuts = [i + 1 for i in range(len(raw)) if raw[i:i + 1] == b"\r"]
        for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True):
            log.append(f"upstream {raw[a:b]!r}")
            yield raw[a:b]
        log.append("upstream ended")

    def stream(sent: Sent) -> UpstreamReply:
        if len(upstream.sent) == 1:
            handle = re.findall(r"cs_\d{20}", sent.body.decode())[0]
            chunks = [_chunk({"role": "assistant", "content": "Let me check. "}),
                      _chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                              "function": {"name": NAME, "arguments": json.dumps(
                                                  {"handle": handle})}}]}),
                      _chunk({}, "tool_calls")]
        else:
            chunks = [_chunk({"content": "Rebooked."}), _chunk({}, "stop")]
        text = "".join(f"data: {json.dumps(c)}{eol}{eol}" for c in chunks) + \
            f"data: [DONE]{eol}{eol}"
        return UpstreamReply(200, [("content-type", "text/event-stream")],
                             reads(text.encode()))  # type: ignore[arg-type]

    app, upstream = make(stream, proxy_openai_url="https://api.example.test/v1")

    async def logged(scope: Any, receive: Any, send: Any) -> None:
        async def sending(message: Any) -> None:
            if message["type"] == "http.response.body" and message.get("body"):
                log.append(f"client {message['body']!r}")
            await send(message)
        await app(scope, receive, sending)

    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=logged), base_url="http://test") as c:
        r = await c.post("/v1/chat/completions", json={
            "model": "gpt-4o-mini", "stream": True,
            "messages": coding_run(14, output_chars=3000)},
            headers={"authorization": f"Bearer {KEY}"})
    assert r.status_code == 200
    assert len(upstream.sent) == 2  # the tool's call was found and answered
    assert NAME not in r.text
    content = [json.loads(line[6:])["choices"][0]["delta"].get("content") or ""
               for line in r.text.split("\n") if line.startswith("data: {")]
    assert "".join(content) == "Let me check. Rebooked."
    # The first round's text went out while its upstream stream was still being read.
    first_text = next(i for i, e in enumerate(log) if "Let me check" in e and
                      e.startswith("client"))
    assert first_text < log.index("upstream ended"), log


async def test_the_providers_headers_are_read_in_any_case_and_each_kept(make, caplog):
    """OpenAI spells its request id ``X-Request-ID``; a provider may send a header twice."""
    def answer(_: Sent) -> UpstreamReply:
        return UpstreamReply.json(COMPLETION, headers=[
            ("X-Request-ID", "req_mixed_case"), ("Set-Cookie", "a=1"), ("Set-Cookie", "b=2"),
            ("X-Contextsynth-Mode", "spoofed")])

    app, _ = make(answer)
    caplog.set_level(logging.INFO, logger="app.access")
    async with serve(app) as c:
        r = await c.post("/v1/chat/completions", json={
            "model": "gpt-4o-mini", "messages": coding_run(14, output_chars=3000)},
            headers={"x-contextsynth-mode": "fast"})
    assert r.status_code == 200
    [line] = [json.loads(JsonFormatter().format(rec)) for rec in caplog.records
              if rec.name == "app.access"]
    assert line["upstream_request_id"] == "req_mixed_case"
    # The provider's id for its SDK, the service's own beside it.
    assert r.headers.get_list("x-request-id") == ["req_mixed_case"]
    assert r.headers["x-contextsynth-request-id"]
    assert r.headers.get_list("set-cookie") == ["a=1", "b=2"]
    assert r.headers.get_list("x-contextsynth-mode") == ["fast"]  # contextsynth's, once
