"""Gemini through the proxy in process, against an upstream in memory: where its key
goes (never into a log or an error), its error shape when the proxy is busy, and what
happens to a body compaction cannot read. ``tests/integration/test_proxy_gemini.py``
runs the same routes with google-genai over loopback."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Callable
from typing import Any

import pytest
from fastapi import FastAPI
from prometheus_client import CollectorRegistry

from app.adapters.upstream import Slots
from app.adapters.upstream_memory import MemoryUpstream, Sent, UpstreamReply
from app.main import create_app
from app.settings import Settings
from tests.conftest import serve
from tests.support.build import coding_run
from tests.support.convert import to_gemini

pytestmark = pytest.mark.anyio

KEY = "AIza-caller-7d0e"
SERVER_KEY = "AIza-server-side-31f5"
BASE = "https://gemini.example.test"
GENERATED = {"candidates": [{"content": {"parts": [{"text": "Done."}], "role": "model"},
                             "finishReason": "STOP", "index": 0}],
             "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 1,
                               "totalTokenCount": 10},
             "modelVersion": "gemini-2.5-pro", "responseId": "resp-1"}


def _generated(_: Sent) -> UpstreamReply:
    return UpstreamReply.json(GENERATED)


@pytest.fixture
def make(encoder: Any) -> Callable[..., tuple[FastAPI, MemoryUpstream]]:
    def build(handler: Callable[[Sent], Any] = _generated, slots: Slots | None = None,
              environ: dict[str, str] | None = None,
              **settings: Any) -> tuple[FastAPI, MemoryUpstream]:
        upstream = MemoryUpstream(handler, **({"slots": slots} if slots else {}))
        app = create_app(Settings(proxy_gemini_url=BASE, **settings),
                         registry=CollectorRegistry(), encoder=encoder,
                         discover=lambda: [], environ=environ or {}, upstream=upstream)
        return app, upstream
    return build


async def test_the_model_in_the_path_names_the_tier_and_the_query_goes_on(make):
    app, upstream = make()
    body = to_gemini(coding_run(14, output_chars=3000))
    async with serve(app) as c:
        r = await c.post("/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
                         json=body, headers={"x-goog-api-key": KEY})
        metrics = (await c.get("/metrics")).text
    assert r.status_code == 200, r.text
    assert r.headers["x-contextsynth-compaction"] == "compacted"
    [sent] = upstream.sent
    assert sent.name == "gemini"
    assert sent.url == f"{BASE}/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    assert sent.header("x-goog-api-key") == KEY
    assert len(sent.body) < len(json.dumps(body))
    # gemini-2.5-pro is a frontier model: its tokens are counted under that tier.
    assert 'contextsynth_proxy_tokens_total{direction="in",tier="frontier",' \
           'upstream="gemini"}' in metrics


async def test_a_tenants_server_side_key_replaces_the_callers_wherever_it_came(make):
    app, upstream = make(proxy_tenant_keys={"default": {"gemini": "TENANT_GEMINI_KEY"}},
                         environ={"TENANT_GEMINI_KEY": SERVER_KEY})
    body = to_gemini([{"role": "user", "content": "hi"}])
    async with serve(app) as c:
        await c.post(f"/v1/models/gemini-2.5-flash:streamGenerateContent?alt=sse&key={KEY}",
                     json=body)
        await c.get("/v1beta/models", params={"key": KEY, "pageSize": "5"})
        await c.get("/v1/models", headers={"x-goog-api-key": KEY})
    generated, listed, listed_v1 = upstream.sent
    assert generated.url == f"{BASE}/v1/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    assert listed.url == f"{BASE}/v1beta/models?pageSize=5"
    assert listed_v1.url == f"{BASE}/v1/models"  # Gemini's, by its key header
    for sent in upstream.sent:
        assert sent.header("x-goog-api-key") == SERVER_KEY
        assert KEY not in sent.url and KEY not in str(sent.headers)


async def test_a_full_pool_answers_in_geminis_error_shape(make):
    release = asyncio.Event()

    async def held(sent: Sent) -> UpstreamReply:
        if len(upstream.sent) == 1:
            await release.wait()  # the first request holds the only slot
        return _generated(sent)

    app, upstream = make(held, slots=Slots(1, 0, 1.0))
    body = to_gemini([{"role": "user", "content": "hi"}])
    path = "/v1beta/models/gemini-2.5-flash:generateContent"
    async with serve(app) as c:
        first = asyncio.create_task(c.post(path, json=body))
        while not upstream.sent:
            await asyncio.sleep(0.01)
        second = await c.post(path, json=body)
        release.set()
        assert (await first).status_code == 200
    assert second.status_code == 503, second.text
    assert int(second.headers["retry-after"]) >= 1
    error = second.json()["error"]  # what google-genai reads: code, status, message
    assert (error["code"], error["status"]) == (503, "UNAVAILABLE")
    assert "was not sent to gemini" in error["message"]


async def test_an_unreachable_gemini_is_a_502_that_never_shows_the_key(encoder):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    app = create_app(Settings(proxy_gemini_url=f"http://127.0.0.1:{port}"),
                     registry=CollectorRegistry(), encoder=encoder, discover=lambda: [],
                     environ={})
    body = to_gemini([{"role": "user", "content": "hi"}])
    async with serve(app) as c:
        r = await c.post(f"/v1beta/models/gemini-2.5-flash:generateContent?key={KEY}",
                         json=body)
    assert r.status_code == 502, r.text
    error = r.json()["error"]  # what google-genai reads: code, status, message
    assert (error["code"], error["status"]) == (502, "UNAVAILABLE")
    assert "CONTEXTSYNTH_PROXY_GEMINI_URL" in error["message"] and KEY not in r.text
    assert "127.0.0.1" not in r.text


async def test_a_body_compaction_cannot_read_goes_on_as_it_came(make):
    app, upstream = make()
    odd = {"contents": [{"role": "assistant", "parts": [{"text": "not a Gemini role"}]}],
           "generationConfig": {"temperature": 0}}
    async with serve(app) as c:
        r = await c.post("/v1beta/models/gemini-2.5-flash:generateContent", json=odd)
    assert r.status_code == 200
    assert r.headers["x-contextsynth-compaction"] == "failed"
    assert upstream.sent[0].json() == odd
