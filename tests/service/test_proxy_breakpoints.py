"""Anthropic prompt-cache breakpoints through the proxy: ``x-contextsynth-cache-breakpoints:
true`` on ``/v1/messages`` has compaction place ``cache_control`` marks where the prefix
later calls resend ends; other providers ignore it and say so, and a value that is
neither true nor false is Anthropic's own 400 (the SDK raises its BadRequestError)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anthropic
import httpx2
import pytest
from fastapi import FastAPI
from prometheus_client import CollectorRegistry

from app.adapters.upstream_memory import MemoryUpstream, Sent, UpstreamReply
from app.main import create_app
from app.settings import Settings
from tests.conftest import serve
from tests.support.build import coding_run
from tests.support.convert import to_anthropic, to_gemini

pytestmark = pytest.mark.anyio

HEADER = "x-contextsynth-cache-breakpoints"
MESSAGE = {"id": "msg_1", "type": "message", "role": "assistant",
           "model": "claude-haiku-4-5", "content": [{"type": "text", "text": "Done."}],
           "stop_reason": "end_turn", "stop_sequence": None,
           "usage": {"input_tokens": 100, "output_tokens": 2}}
COMPLETION = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1,
              "model": "gpt-4o-mini", "choices": [{"index": 0, "finish_reason": "stop",
                                                   "message": {"role": "assistant",
                                                               "content": "Done."}}]}
GENERATED = {"candidates": [{"content": {"parts": [{"text": "Done."}], "role": "model"},
                             "finishReason": "STOP", "index": 0}],
             "modelVersion": "gemini-2.5-flash"}
# By the path the proxy sent to: each provider's own answer.
ANSWERS = {"/v1/messages": MESSAGE, "/v1/chat/completions": COMPLETION,
           "/v1beta/models/gemini-2.5-flash:generateContent": GENERATED}


def _answer(sent: Sent) -> UpstreamReply:
    return UpstreamReply.json(ANSWERS[sent.path], headers=[("request-id", "req_up_2")])


@pytest.fixture
def make(encoder: Any) -> Callable[..., tuple[FastAPI, MemoryUpstream]]:
    def build(**settings: Any) -> tuple[FastAPI, MemoryUpstream]:
        upstream = MemoryUpstream(_answer)
        # The expand tool is off: these tests look at marks, not at its tool.
        app = create_app(Settings(proxy_expand_tool=False, **settings),
                         registry=CollectorRegistry(), encoder=encoder,
                         discover=lambda: [], environ={}, upstream=upstream)
        return app, upstream
    return build


def _messages(run: list[dict[str, Any]]) -> dict[str, Any]:
    return {"model": "claude-haiku-4-5", "max_tokens": 256, **to_anthropic(run)}


def _marks(body: dict[str, Any]) -> list[tuple[int, int]]:
    """Where a sent body carries cache_control marks: (message, block)."""
    return [(i, j) for i, m in enumerate(body["messages"])
            if isinstance(m["content"], list)
            for j, block in enumerate(m["content"]) if "cache_control" in block]


def _unmarked(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages without marks, a text content written as its one block (as a mark
    needs it)."""
    def blocks(content: Any) -> list[dict[str, Any]]:
        listed = content if isinstance(content, list) else [{"type": "text", "text": content}]
        return [{k: v for k, v in b.items() if k != "cache_control"} for b in listed]
    return [{**m, "content": blocks(m["content"])} for m in messages]


async def test_asked_for_the_upstream_gets_marks_where_the_resent_prefix_ends(make):
    app, upstream = make()
    body = _messages(coding_run(14, output_chars=3000))
    async with serve(app) as c:
        r = await c.post("/v1/messages", json=body, headers={HEADER: "true"})
        plain = await c.post("/v1/messages", json=body)
        said_no = await c.post("/v1/messages", json=body, headers={HEADER: " False "})
    assert r.status_code == 200, r.text
    assert r.headers["x-contextsynth-compaction"] == "compacted"
    marked, unmarked, refused = (s.json() for s in upstream.sent)
    marks = _marks(marked)
    assert marks and int(r.headers[HEADER]) == len(marks) <= 4
    # The marks are the only difference: the same compaction otherwise.
    assert _unmarked(marked["messages"]) == _unmarked(unmarked["messages"])
    assert {k: v for k, v in marked.items() if k != "messages"} == \
        {k: v for k, v in unmarked.items() if k != "messages"}
    for answer, sent in ((plain, unmarked), (said_no, refused)):
        assert answer.status_code == 200 and HEADER not in answer.headers
        assert "cache_control" not in json.dumps(sent)


async def test_a_conversation_left_as_it_was_is_marked_too_and_the_callers_marks_count(make):
    app, upstream = make()
    body = _messages(coding_run(2, output_chars=100))
    body["system"] = [{"type": "text", "text": "You fix bugs.",
                       "cache_control": {"type": "ephemeral"}}]
    async with serve(app) as c:
        r = await c.post("/v1/messages", json=body, headers={HEADER: "TRUE"})
    assert r.headers["x-contextsynth-compaction"] == "unchanged"
    [sent] = upstream.sent
    got = sent.json()
    assert got["system"] == body["system"]  # the caller's own mark stays
    assert int(r.headers[HEADER]) == len(_marks(got)) >= 1
    assert _unmarked(got["messages"]) == _unmarked(body["messages"])  # only marks added


async def test_with_the_proxy_off_nothing_is_marked_and_the_header_says_so(make):
    app, upstream = make()
    body = _messages(coding_run(14, output_chars=3000))
    async with serve(app) as c:
        r = await c.post("/v1/messages", json=body,
                         headers={HEADER: "true", "x-contextsynth-mode": "off"})
    assert r.headers[HEADER] == "0"
    assert upstream.sent[0].json() == body  # untouched: no marks


async def test_a_value_neither_true_nor_false_is_anthropics_own_400(make):
    app, upstream = make()
    body = _messages(coding_run(14, output_chars=3000))
    async with serve(app) as c:
        r = await c.post("/v1/messages", json=body, headers={HEADER: "yes"})
        # The SDK in process, on the app itself (its client is httpx2's).
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app),
                                      base_url="http://test") as http:
            sdk = anthropic.AsyncAnthropic(base_url="http://test", api_key="sk-ant-caller",
                                           http_client=http, max_retries=0)
            with pytest.raises(anthropic.BadRequestError) as raised:
                await sdk.messages.create(model="claude-haiku-4-5", max_tokens=16,
                                          messages=body["messages"],
                                          extra_headers={HEADER: "always"})
        counted = await c.post("/v1/messages/count_tokens", json=body,
                               headers={HEADER: "1"})
    assert r.status_code == 400
    problem = r.json()
    assert problem["type"] == "error"
    assert problem["error"]["type"] == "invalid_request_error"
    assert f"{HEADER} 'yes' is neither true nor false" in problem["error"]["message"]
    assert "'always'" in raised.value.message
    assert counted.status_code == 400
    assert upstream.sent == []  # refused here: the provider never saw them


@pytest.mark.parametrize("value", ["true", "yes"])
async def test_other_providers_ignore_it_and_say_why(make, value):
    app, upstream = make(proxy_openai_url="https://api.example.test/v1",
                         proxy_gemini_url="https://gemini.example.test")
    run = coding_run(14, output_chars=3000)
    async with serve(app) as c:
        chat = await c.post("/v1/chat/completions", json={"model": "gpt-4o-mini",
                                                          "messages": run},
                            headers={HEADER: value})
        gemini = await c.post("/v1beta/models/gemini-2.5-flash:generateContent",
                              json=to_gemini(run), headers={HEADER: value})
    for answer in (chat, gemini):
        assert answer.status_code == 200, answer.text
        assert answer.headers["x-contextsynth-compaction"] == "compacted"
        assert answer.headers[HEADER].startswith("ignored: cache_control breakpoints are "
                                                 "Anthropic's")
    assert [s.url for s in upstream.sent] == [
        "https://api.example.test/v1/chat/completions",
        "https://gemini.example.test/v1beta/models/gemini-2.5-flash:generateContent"]
    assert all("cache_control" not in s.body.decode() for s in upstream.sent)
