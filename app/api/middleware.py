"""ASGI middleware: the body-size limit and per-request metrics."""

from __future__ import annotations

import json
import time
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.errors import MEDIA_TYPE, PROBLEM_TYPE
from app.metrics import Metrics


class BodyLimit:
    """Reject bodies over the limit with a 413 problem, whether announced or chunked.

    The body is buffered up to the limit (the JSON parser needs all of it
    anyway) and replayed to the app, so nothing is half-read.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._reject(scope, send, int(declared))
            return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, _replay([], message), send)
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._reject(scope, send, None)
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        await self.app(scope, _replay(chunks, None), send)

    async def _reject(self, scope: Scope, send: Send, declared: int | None) -> None:
        size = f"{declared} bytes" if declared is not None else "more than that"
        body = json.dumps({
            "type": PROBLEM_TYPE.format(slug="body-too-large"),
            "title": "The request body is too large",
            "status": 413,
            "detail": f"this service accepts bodies up to {self.max_bytes} bytes and this one "
                      f"has {size}. Send fewer or shorter messages (compress older history "
                      "first), or raise CONTEXTSYNTH_MAX_BODY_BYTES.",
            "instance": scope.get("path"),
            "limit": self.max_bytes,
        }).encode()
        await send({"type": "http.response.start", "status": 413, "headers": [
            (b"content-type", MEDIA_TYPE.encode()), (b"content-length", str(len(body)).encode()),
            (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})


def _replay(chunks: list[bytes], other: Message | None) -> Receive:
    pending: list[Message] = [
        {"type": "http.request", "body": b"".join(chunks), "more_body": False}
    ] if other is None else [other]

    async def receive() -> Message:
        if pending:
            return pending.pop()
        return {"type": "http.disconnect"}

    return receive


class RequestMetrics:
    """Count and time every request by route template, mode and status."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500
        started = time.perf_counter()

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            route: Any = scope.get("route")
            endpoint = getattr(route, "path", None) or "unmatched"
            mode = str(scope.get("state", {}).get("mode", "none"))
            self.metrics.requests.labels(endpoint, mode, str(status)).inc()
            self.metrics.duration.labels(endpoint, mode).observe(time.perf_counter() - started)
