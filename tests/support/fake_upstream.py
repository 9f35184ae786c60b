"""A fake OpenAI and Anthropic, over loopback, for the proxy's end-to-end tests.

It records every request (path, headers, JSON body) and answers as the providers do:
a chat completion or a message, streamed as server-sent events when asked, with a
tool call, or a scripted error (a 429 with retry-after).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.support.threaded import ThreadedServer


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class Scripted:
    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    # A streamed answer instead of the body: (event name, data) pairs.
    events: list[tuple[str | None, dict[str, Any] | str]] | None = None


def _sse(events: list[tuple[str | None, dict[str, Any] | str]]) -> AsyncIterator[bytes]:
    async def stream() -> AsyncIterator[bytes]:
        for name, data in events:
            text = data if isinstance(data, str) else json.dumps(data)
            yield ((f"event: {name}\n" if name else "") + f"data: {text}\n\n").encode()
    return stream()


class FakeUpstream:
    TEXT = "Booked HAT069 for May 20."

    def __init__(self) -> None:
        self.received: list[Received] = []
        self.script: list[Scripted] = []
        # Answers made from the request itself (a tool call naming what it was sent).
        self.answer: Callable[[Received], Scripted | None] | None = None
        self.slow_streams_cut = 0  # slow streams whose reader left before the end
        self.slow_streams = 0  # slow streams running now
        self.most_slow_streams = 0  # the most that ran at once
        app = Starlette(routes=[Route("/v1/chat/completions", self._openai, methods=["POST"]),
                                Route("/v1/messages", self._anthropic, methods=["POST"]),
                                Route("/v1/responses", self._responses, methods=["POST"]),
                                Route("/v1/{path:path}", self._other,
                                      methods=["GET", "POST", "DELETE"])])
        self._served = ThreadedServer(app, name="the fake upstream")
        self.port = self._served.port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _record(self, request: Request) -> tuple[dict[str, Any], Response | None]:
        body = await request.json()
        self.received.append(Received(request.url.path, dict(request.headers), body))
        made = self.answer(self.received[-1]) if self.answer is not None else None
        if made is not None and made.events is not None:
            return body, StreamingResponse(_sse(made.events), status_code=made.status,
                                           media_type="text/event-stream")
        if made is not None:
            return body, JSONResponse(made.body, status_code=made.status, headers=made.headers)
        if self.script:
            s = self.script.pop(0)
            return body, JSONResponse(s.body, status_code=s.status, headers=s.headers)
        return body, None

    async def _openai(self, request: Request) -> Response:
        body, scripted = await self._record(request)
        if scripted is not None:
            return scripted
        headers = {"x-request-id": "req_upstream_1", "x-ratelimit-remaining-tokens": "9000"}
        if body.get("model") == "slow":
            return StreamingResponse(self._slow(), media_type="text/event-stream")
        if body.get("stream"):
            base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
                    "model": body["model"]}
            events: list[tuple[str | None, dict[str, Any] | str]] = [
                (None, {**base, "choices": [{"index": 0, "delta": {"role": "assistant",
                                                                    "content": ""},
                                             "finish_reason": None}]})]
            events += [(None, {**base, "choices": [{"index": 0, "delta": {"content": word},
                                                    "finish_reason": None}]})
                       for word in self.TEXT.split(" ")]
            events += [(None, {**base, "choices": [{"index": 0, "delta": {},
                                                    "finish_reason": "stop"}]}),
                       (None, "[DONE]")]
            return StreamingResponse(_sse(events), media_type="text/event-stream",
                                     headers=headers)
        return JSONResponse({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1,
            "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": None, "tool_calls": [{
                    "id": "call_9", "type": "function", "function": {
                        "name": "book_flight", "arguments": '{"flight": "HAT069"}'}}]}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
        }, headers=headers)

    async def _anthropic(self, request: Request) -> Response:
        body, scripted = await self._record(request)
        if scripted is not None:
            return scripted
        headers = {"request-id": "req_upstream_2"}
        message = {"id": "msg_1", "type": "message", "role": "assistant",
                   "model": body["model"], "stop_reason": "tool_use", "stop_sequence": None,
                   "usage": {"input_tokens": 100, "output_tokens": 10},
                   "content": [{"type": "tool_use", "id": "toolu_9", "name": "book_flight",
                                "input": {"flight": "HAT069"}}]}
        if body.get("stream"):
            start = {**message, "content": [], "stop_reason": None,
                     "usage": {"input_tokens": 100, "output_tokens": 1}}
            events: list[tuple[str | None, dict[str, Any] | str]] = [
                ("message_start", {"type": "message_start", "message": start}),
                ("content_block_start", {"type": "content_block_start", "index": 0,
                                         "content_block": {"type": "text", "text": ""}})]
            events += [("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                "delta": {"type": "text_delta",
                                                          "text": word + " "}})
                       for word in self.TEXT.split(" ")]
            events += [("content_block_stop", {"type": "content_block_stop", "index": 0}),
                       ("message_delta", {"type": "message_delta",
                                          "delta": {"stop_reason": "end_turn",
                                                    "stop_sequence": None},
                                          "usage": {"output_tokens": 10}}),
                       ("message_stop", {"type": "message_stop"})]
            return StreamingResponse(_sse(events), media_type="text/event-stream",
                                     headers=headers)
        return JSONResponse(message, headers=headers)

    async def _responses(self, request: Request) -> Response:
        body, scripted = await self._record(request)
        if scripted is not None:
            return scripted
        return JSONResponse({
            "id": "resp_1", "object": "response", "created_at": 1, "status": "completed",
            "model": body["model"], "parallel_tool_calls": True, "tool_choice": "auto",
            "tools": [], "output": [{
                "type": "function_call", "id": "fc_1", "call_id": "call_9",
                "name": "book_flight", "arguments": '{"flight": "HAT069"}',
                "status": "completed"}]}, headers={"x-request-id": "req_upstream_3"})

    async def _other(self, request: Request) -> Response:
        """Any other provider path: recorded, and answered with what it was sent."""
        raw = await request.body()
        body = json.loads(raw) if raw else {}
        self.received.append(Received(f"{request.url.path}?{request.url.query}".rstrip("?"),
                                      dict(request.headers), body))
        if request.url.path.endswith("/models"):
            return JSONResponse({"object": "list", "data": [
                {"id": "gpt-4o-mini", "object": "model", "created": 1, "owned_by": "openai",
                 "type": "model", "display_name": "Model", "created_at": "2025-01-01T00:00:00Z"}],
                "has_more": False, "first_id": "gpt-4o-mini", "last_id": "gpt-4o-mini"})
        if request.url.path.endswith("/count_tokens"):
            return JSONResponse({"input_tokens": 1234})
        if request.url.path.endswith("/embeddings"):
            return JSONResponse({"object": "list", "model": body.get("model"), "data": [
                {"object": "embedding", "index": 0, "embedding": [0.25, -0.5]}],
                "usage": {"prompt_tokens": 3, "total_tokens": 3}})
        return JSONResponse({"error": {"message": "no such path"}}, status_code=404)

    async def _slow(self) -> AsyncIterator[bytes]:
        """A stream of 50 events, 0.1 s apart, that counts readers who left early."""
        sent = 0
        self.slow_streams += 1
        self.most_slow_streams = max(self.most_slow_streams, self.slow_streams)
        try:
            for sent in range(50):
                yield b'data: {"n": %d}\n\n' % sent
                await asyncio.sleep(0.1)
        finally:
            self.slow_streams -= 1
            if sent < 49:
                self.slow_streams_cut += 1

    def __enter__(self) -> FakeUpstream:
        self._served.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._served.stop()
