"""A real webhook receiver on loopback: verifies Standard Webhooks signatures, records events."""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import Callable
from typing import Any

from standardwebhooks import Webhook
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from tests.support.threaded import ThreadedServer

SECRET = "whsec_" + base64.b64encode(b"contextsynth-test-secret-32-bytes").decode()


class Receiver:
    def __init__(self, secret: str = SECRET, port: int | None = None) -> None:
        self.events: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.attempts = 0
        self.rejected_signatures = 0
        self.respond: Callable[[int], tuple[int, dict[str, str]]] = lambda n: (204, {})
        self.delay_s = 0.0  # a slow endpoint: each answer waits this long
        self._verifier = Webhook(secret)
        app = Starlette(routes=[Route("/hook", self._hook, methods=["POST"])])
        self._served = ThreadedServer(app, port, name="the receiver")
        self.port = self._served.port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    async def _hook(self, request: Request) -> Response:
        self.attempts += 1
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        status, headers = self.respond(self.attempts)
        if not 200 <= status < 300:
            return Response(status_code=status, headers=headers)
        try:
            body = await request.body()
        except ClientDisconnect:  # the sender died mid-request (a fault test kills it)
            return Response(status_code=400)
        try:
            event = self._verifier.verify(body, dict(request.headers))
        except Exception:
            self.rejected_signatures += 1
            return Response(status_code=400)
        self.events.append(event)
        self.headers.append(dict(request.headers))
        return Response(status_code=status)

    async def wait_for(self, count: int, timeout_s: float = 10.0) -> list[dict[str, Any]]:
        """Wait without blocking the loop the service delivers from."""
        deadline = time.monotonic() + timeout_s
        while len(self.events) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"got {len(self.events)} of {count} events")
            await asyncio.sleep(0.02)
        return self.events

    def __enter__(self) -> Receiver:
        self._served.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._served.stop()
