"""A fake Gemini API (generativelanguage), over loopback, for the proxy's end-to-end
tests: a host of its own, as Google's is, beside the fake OpenAI and Anthropic.

It records every request (path with its query, headers, JSON body) and answers as the
Gemini API does, under v1 and v1beta alike: ``generateContent`` with a function call,
``streamGenerateContent?alt=sse`` as server-sent events of text, ``countTokens``,
``batchEmbedContents`` (what the SDK's embed_content calls), the model list, and a
scripted error (a 429 in Google's shape).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.support.fake_upstream import Received, Scripted
from tests.support.threaded import ThreadedServer

MODEL = "gemini-2.5-flash"
USAGE = {"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110,
         "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 100}]}
MODELS = {"models": [{
    "name": f"models/{MODEL}", "version": "001", "displayName": "Gemini 2.5 Flash",
    "description": "Stable version of Gemini 2.5 Flash", "inputTokenLimit": 1048576,
    "outputTokenLimit": 65536, "supportedGenerationMethods": [
        "generateContent", "countTokens", "createCachedContent", "batchGenerateContent"],
    "temperature": 1, "topP": 0.95, "topK": 64, "maxTemperature": 2, "thinking": True}],
    "nextPageToken": ""}


def _candidate(parts: list[dict[str, Any]], finish: str | None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    return candidate


class FakeGemini:
    TEXT = "Booked HAT069 for May 20."
    RESPONSE_ID = "x1Y3aM2sBqGAz7IPk5vQ-Ag"

    def __init__(self) -> None:
        self.received: list[Received] = []
        self.script: list[Scripted] = []
        routes = [Route(f"/{version}/models/{{model}}:{method}", answer, methods=["POST"])
                  for version in ("v1", "v1beta")
                  for method, answer in (("generateContent", self._generate),
                                         ("streamGenerateContent", self._stream),
                                         ("countTokens", self._count),
                                         ("batchEmbedContents", self._embed))]
        routes += [Route(f"/{version}/models", self._models, methods=["GET"])
                   for version in ("v1", "v1beta")]
        self._served = ThreadedServer(Starlette(routes=routes), name="the fake Gemini")
        self.port = self._served.port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _record(self, request: Request) -> tuple[dict[str, Any], Response | None]:
        raw = await request.body()
        body = json.loads(raw) if raw else {}
        path = f"{request.url.path}?{request.url.query}".rstrip("?")
        self.received.append(Received(path, dict(request.headers), body))
        if self.script:
            s = self.script.pop(0)
            return body, JSONResponse(s.body, status_code=s.status, headers=s.headers)
        return body, None

    def _base(self, request: Request) -> dict[str, Any]:
        return {"usageMetadata": USAGE, "modelVersion": request.path_params["model"],
                "responseId": self.RESPONSE_ID}

    async def _generate(self, request: Request) -> Response:
        _, scripted = await self._record(request)
        if scripted is not None:
            return scripted
        call = {"functionCall": {"name": "book_flight", "args": {"flight": "HAT069"}}}
        return JSONResponse({"candidates": [_candidate([call], "STOP")],
                             **self._base(request)})

    async def _stream(self, request: Request) -> Response:
        _, scripted = await self._record(request)
        if scripted is not None:
            return scripted
        words = self.TEXT.split(" ")
        chunks = [{"candidates": [_candidate([{"text": w + (" " if i < len(words) - 1
                                                            else "")}],
                                             "STOP" if i == len(words) - 1 else None)],
                   **self._base(request)} for i, w in enumerate(words)]

        async def events() -> AsyncIterator[bytes]:
            for chunk in chunks:  # Google ends each event with CRLF CRLF
                yield f"data: {json.dumps(chunk)}\r\n\r\n".encode()

        if request.query_params.get("alt") == "sse":
            return StreamingResponse(events(), media_type="text/event-stream")
        return JSONResponse(chunks)  # without alt=sse: one JSON array

    async def _count(self, request: Request) -> Response:
        await self._record(request)
        return JSONResponse({"totalTokens": 31, "promptTokensDetails": [
            {"modality": "TEXT", "tokenCount": 31}]})

    async def _embed(self, request: Request) -> Response:
        await self._record(request)
        return JSONResponse({"embeddings": [{"values": [0.25, -0.5]}]})

    async def _models(self, request: Request) -> Response:
        await self._record(request)
        return JSONResponse(MODELS)

    def __enter__(self) -> FakeGemini:
        self._served.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._served.stop()
