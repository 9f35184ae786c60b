"""Gemini through the proxy in process, against an upstream in memory: where its key
goes (never into a log or an error), its error shape when the proxy is busy, and what
happens to a body compaction cannot read. ``tests/integration/test_proxy_gemini.py``
runs the same routes with google-genai over loopback."""

from __future__ import annotations

import asyncio
import json
import re
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


# The expand tool: the model's first answer calls it with a handle the compaction made,
# its second answers; the client gets one answer without the call.
TOOL = "contextsynth_expand"
SIGNATURE = "EhsKGQG7v9rN-expand-signature"


def _handle(sent: Sent) -> str:
    return re.findall(r"cs_\d{20}", sent.body.decode())[0]


def _expanding(stream: bool) -> Callable[[Sent], UpstreamReply]:
    def answer(sent: Sent) -> UpstreamReply:
        call = {"functionCall": {"id": "expand-1", "name": TOOL,
                                 "args": {"handle": _handle(sent)}},
                "thoughtSignature": SIGNATURE}
        first = TOOL not in json.dumps(sent.json()["contents"][-2:])
        parts = [[{"text": "Let me "}, {"text": "check. "}, call, {"text": ""}] if first
                 else [{"text": "Rebooked"}, {"text": "."}]][0]
        if not stream:
            return UpstreamReply.json({**GENERATED, "candidates": [{
                "content": {"role": "model", "parts": [
                    {"text": "".join(p.get("text", "") for p in parts)}, call]
                    if first else [{"text": "Rebooked."}]},
                "finishReason": "STOP", "index": 0}]})
        # A chunk a part, as Gemini streams them; the finish and the usage on the last.
        chunks = [{"candidates": [{"content": {"role": "model", "parts": [part]},
                                   "index": 0}], "modelVersion": "gemini-2.5-pro"}
                  for part in parts]
        chunks[-1]["candidates"][0]["finishReason"] = "STOP"
        chunks[-1]["usageMetadata"] = GENERATED["usageMetadata"]
        return UpstreamReply.events([(None, c) for c in chunks])
    return answer


async def _span_text(c: Any, handle: str) -> str:
    """The start of the span's original text, as GET /expand/{handle} gives it back,
    written as JSON (the tool reads the span back as JSON lines)."""
    originals = (await c.get(f"/expand/{handle}")).json()["contents"]
    texts = [json.dumps(p["functionResponse"]["response"]["output"])[1:60]
             for content in originals for p in content["parts"] if "functionResponse" in p]
    return texts[0]


async def test_gemini_the_client_gets_the_answer_after_the_expansion(make):
    app, upstream = make(_expanding(stream=False))
    body = to_gemini(coding_run(14, output_chars=3000))
    async with serve(app) as c:
        r = await c.post("/v1beta/models/gemini-2.5-pro:generateContent", json=body,
                         headers={"x-goog-api-key": KEY})
        first, second = upstream.sent
        original = await _span_text(c, _handle(first))
    assert r.status_code == 200, r.text
    assert r.json()["candidates"][0]["content"]["parts"] == [{"text": "Rebooked."}]
    assert r.headers["x-contextsynth-expansions"] == "1"
    assert r.headers["x-contextsynth-expansion-tokens"] == "10"
    declared = [f["name"] for t in first.json()["tools"] for f in t["functionDeclarations"]]
    assert TOOL in declared
    said, replies = second.json()["contents"][-2:]
    # The model's content as it came, the signature on its call, then the result.
    assert said["role"] == "model" and said["parts"][1]["thoughtSignature"] == SIGNATURE
    [result] = replies["parts"]
    assert replies["role"] == "user" and result["functionResponse"]["id"] == "expand-1"
    assert result["functionResponse"]["name"] == TOOL
    assert original in result["functionResponse"]["response"]["output"]
    assert second.url == first.url and second.header("x-goog-api-key") == KEY


async def test_gemini_a_stream_goes_on_with_the_next_round_and_never_shows_the_tool(make):
    app, upstream = make(_expanding(stream=True))
    body = to_gemini(coding_run(14, output_chars=3000))
    path = "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    async with serve(app) as c:
        r = await c.post(path, json=body, headers={"x-goog-api-key": KEY})
        first, second = upstream.sent
        original = await _span_text(c, _handle(first))
    assert r.status_code == 200, r.text
    assert TOOL not in r.text
    chunks = [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: ")]
    text = "".join(p.get("text", "") for ch in chunks
                   for p in ch["candidates"][0]["content"]["parts"])
    assert text == "Let me check. Rebooked."
    finishes = [ch["candidates"][0].get("finishReason") for ch in chunks]
    assert finishes.count("STOP") == 1 and finishes[-1] == "STOP"
    said, replies = second.json()["contents"][-2:]
    assert said == {"role": "model", "parts": [
        {"text": "Let me check. "}, {"functionCall": {
            "id": "expand-1", "name": TOOL, "args": {"handle": _handle(first)}},
            "thoughtSignature": SIGNATURE}]}
    assert original in replies["parts"][0]["functionResponse"]["response"]["output"]
    assert second.url.endswith(":streamGenerateContent?alt=sse")


async def test_gemini_what_the_model_read_is_back_before_its_answer_next_time(make):
    app, upstream = make(_expanding(stream=False))
    body = to_gemini(coding_run(14, output_chars=3000))
    path = "/v1beta/models/gemini-2.5-pro:generateContent"
    async with serve(app) as c:
        answer = (await c.post(path, json=body)).json()["candidates"][0]["content"]
        made = _handle(upstream.sent[0])
        upstream.sent.clear()
        follow_up = {**body, "contents": [*body["contents"], answer, {
            "role": "user", "parts": [{"text": "Thanks. Is the seat the same?"}]}]}
        await c.post(path, json=follow_up)
    contents = upstream.sent[0].json()["contents"]
    at = max(i for i, content in enumerate(contents) if content["parts"] == answer["parts"])
    said, replies = contents[at - 2:at]
    assert said["parts"][-1]["functionCall"] == {"id": "expand-1", "name": TOOL,
                                                 "args": {"handle": made}}
    assert said["parts"][-1]["thoughtSignature"] == SIGNATURE
    assert replies["parts"][0]["functionResponse"]["id"] == "expand-1"


async def test_gemini_is_not_offered_the_tool_where_it_cannot_take_it(make):
    app, upstream = make()
    body = to_gemini(coding_run(14, output_chars=3000))
    async with serve(app) as c:
        # A stream as a JSON array (no alt=sse): the rounds cannot go on inside it.
        await c.post("/v1beta/models/gemini-2.5-pro:streamGenerateContent", json=body)
        # A JSON answer (Gemini CLI's side checks): Gemini refuses functions beside it.
        await c.post("/v1beta/models/gemini-2.5-flash:generateContent", json={
            **body, "generationConfig": {"responseMimeType": "application/json",
                                         "responseJsonSchema": {"type": "object"}}})
        await c.post("/v1beta/models/gemini-2.5-pro:generateContent", json=body,
                     headers={"x-contextsynth-expand": "off"})
    assert len(upstream.sent) == 3
    for sent in upstream.sent:
        assert b"cs_" in sent.body and TOOL not in sent.body.decode()
