"""Proxy mode when the upstream cannot answer: a problem document that says so (the
provider could not have answered either), 502 when it is unreachable, 504 when silent."""

from __future__ import annotations

import logging
import socket

import pytest
from prometheus_client import CollectorRegistry

from app.adapters.upstream_memory import MemoryUpstream, UpstreamReply
from app.main import create_app
from app.settings import Settings
from tests.conftest import serve
from tests.support.build import coding_run

pytestmark = pytest.mark.anyio

BODY = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again: nothing listens there


ANTHROPIC_BODY = {"model": "claude-haiku-4-5", "max_tokens": 64,
                  "messages": [{"role": "user", "content": "hi"}]}


async def test_an_unreachable_upstream_is_a_502_in_its_providers_shape(make_app, caplog):
    """What the caller's SDK reads (its own server error), naming the setting to check
    but never the internal address, which is the operator's log's."""
    port = _closed_port()
    internal = f"http://127.0.0.1:{port}"
    app = make_app(proxy_openai_url=f"{internal}/v1", proxy_anthropic_url=internal)
    caplog.set_level(logging.WARNING, logger="app.adapters.upstream")
    async with serve(app) as c:
        openai = await c.post("/v1/chat/completions", json=BODY)
        anthropic = await c.post("/v1/messages", json=ANTHROPIC_BODY)
    assert (openai.status_code, anthropic.status_code) == (502, 502), openai.text
    error = openai.json()["error"]
    assert (error["type"], error["code"]) == ("server_error", "upstream_unreachable")
    assert "CONTEXTSYNTH_PROXY_OPENAI_URL" in error["message"]
    assert anthropic.json()["type"] == "error"
    assert anthropic.json()["error"]["type"] == "api_error"
    for r in (openai, anthropic):
        assert str(port) not in r.text and "127.0.0.1" not in r.text
    assert any(internal in rec.getMessage() for rec in caplog.records)


async def test_a_silent_upstream_is_a_504_in_its_providers_shape(make_app):
    with socket.socket() as silent:  # accepts connections (backlog), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        app = make_app(proxy_openai_url=f"http://127.0.0.1:{port}/v1",
                       proxy_anthropic_url=f"http://127.0.0.1:{port}", proxy_timeout_s=0.3)
        async with serve(app) as c:
            openai = await c.post("/v1/chat/completions", json=BODY)
            anthropic = await c.post("/v1/messages", json=ANTHROPIC_BODY)
    assert (openai.status_code, anthropic.status_code) == (504, 504), openai.text
    assert openai.json()["error"]["code"] == "upstream_timeout"
    assert anthropic.json()["error"]["type"] == "timeout_error"
    assert "127.0.0.1" not in openai.text + anthropic.text


async def test_an_unknown_mode_header_says_which_modes_there_are(client):
    r = await client.post("/v1/chat/completions", json=BODY,
                          headers={"x-contextsynth-mode": "turbo"})
    assert r.status_code == 422
    assert "off, fast, auto, deep" in r.json()["detail"]


async def test_a_reused_request_id_cannot_replace_another_requests_receipt(encoder):
    first = {"model": "gpt-4o-mini", "messages": coding_run(14, output_chars=3000)}
    second = {"model": "gpt-4o-mini", "messages": coding_run(20, output_chars=3000)}
    upstream = MemoryUpstream(lambda _: UpstreamReply.json({"id": "chatcmpl-1", "choices": []}))
    app = create_app(Settings(), registry=CollectorRegistry(), encoder=encoder,
                     discover=lambda: [], environ={}, upstream=upstream)
    async with serve(app) as c:
        answers = [await c.post("/v1/chat/completions", json=body,
                                headers={"x-request-id": "agent-7"})
                   for body in (first, second)]
        by_request = (await c.get("/v1/contextsynth/receipts/agent-7")).json()
        own = [(await c.get(f"/v1/contextsynth/receipts/"
                            f"{a.headers['x-contextsynth-receipt']}")).json()
               for a in answers]
    before = [int(a.headers["x-contextsynth-tokens-before"]) for a in answers]
    assert all(a.headers["x-contextsynth-compaction"] == "compacted" for a in answers)
    assert before[0] < before[1]
    assert by_request["tokens_before"] == before[0]  # the first receipt kept its id
    assert [r["tokens_before"] for r in own] == before
    assert own[0]["receipt_id"] != own[1]["receipt_id"]


async def test_a_proxied_call_without_our_key_is_told_which_header_to_send(make_app):
    from app.api.auth import hash_key

    app = make_app(api_keys={hash_key("cs-key"): "team-a"})
    async with serve(app) as c:
        r = await c.post("/v1/chat/completions", json=BODY,
                         headers={"authorization": "Bearer sk-provider"})
    assert r.status_code == 401
    detail = r.json()["detail"]
    assert "x-contextsynth-key: <key>" in detail and "Authorization: Bearer" not in detail


@pytest.mark.parametrize("configured", ["http://127.0.0.1:8000", "http://127.0.0.1:8000/",
                                        "http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1/"])
async def test_the_openai_upstream_may_be_given_with_or_without_v1(encoder, configured):
    upstream = MemoryUpstream(lambda _: UpstreamReply.json({"id": "chatcmpl-1", "choices": []}))
    app = create_app(Settings(proxy_openai_url=configured), registry=CollectorRegistry(),
                     encoder=encoder, discover=lambda: [], environ={}, upstream=upstream)
    async with serve(app) as c:
        assert (await c.post("/v1/chat/completions", json=BODY)).status_code == 200
        assert (await c.get("/v1/models")).status_code == 200  # passed through as it came
    assert [sent.url for sent in upstream.sent] == [
        "http://127.0.0.1:8000/v1/chat/completions", "http://127.0.0.1:8000/v1/models"]


def test_an_openai_upstream_with_a_path_of_its_own_is_used_as_given():
    for url in ("https://api.groq.com/openai/v1", "http://host:8000/v1beta/openai"):
        assert Settings(proxy_openai_url=url).proxy_openai_url == url
