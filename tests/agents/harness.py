"""The service in proxy mode, between a program and the scripted upstream: the app as
``contextsynth serve`` builds it, served by uvicorn in a thread, behind a recorder that
keeps, per request, what the program sent and what the service answered (its status and
``x-contextsynth-*`` headers), since those go to the program and not to the upstream.

    with ScriptedUpstream(...) as upstream, proxy(upstream.url) as service:
        run the program with its base URL at service.url
    service.answered  # Answered(method, path, status, headers, body), in order
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.adapters.tokenizer import load_encoding
from app.main import create_app
from app.settings import Settings
from tests.support.threaded import ThreadedServer


@dataclass
class Answered:
    method: str
    path: str
    body: Any  # the program's request body, parsed (None when empty or not JSON)
    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)  # the service's x-contextsynth-*

    @property
    def compaction(self) -> str:
        return self.headers.get("x-contextsynth-compaction", "")


class Recorder:
    """ASGI middleware that notes each HTTP request and the start of its answer."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.answered: list[Answered] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        record = Answered(scope["method"], scope["path"], None)
        self.answered.append(record)

        async def receiving() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                chunks.append(message.get("body", b""))
                if not message.get("more_body"):
                    try:
                        record.body = json.loads(b"".join(chunks)) if any(chunks) else None
                    except ValueError:
                        record.body = None
            return message

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                record.status = message["status"]
                record.headers = {k.decode().lower(): v.decode()
                                  for k, v in message.get("headers", [])
                                  if k.decode().lower().startswith("x-contextsynth-")}
            await send(message)

        await self.app(scope, receiving, sending)


@dataclass
class Service:
    url: str
    recorder: Recorder

    @property
    def answered(self) -> list[Answered]:
        return self.recorder.answered

    def conversations(self) -> list[Answered]:
        """The requests the proxy reads as a conversation (it compacts or passes them)."""
        return [a for a in self.answered if a.compaction and a.compaction != "passed"]


@contextmanager
def proxy(upstream_url: str, **settings: Any) -> Iterator[Service]:
    """The service with every provider's URL at ``upstream_url``; ``settings`` on top
    (``proxy_mode="auto"``, ...)."""
    options: dict[str, Any] = {"proxy_openai_url": f"{upstream_url}/v1",
                               "proxy_anthropic_url": upstream_url,
                               "proxy_gemini_url": upstream_url, "log_level": "warning"}
    options.update(settings)
    app = create_app(Settings(**options), registry=CollectorRegistry(),
                     encoder=load_encoding("cl100k_base"), discover=lambda: [], environ={})
    recorder = Recorder(app)
    server = ThreadedServer(recorder, name="the service")
    server.start()
    try:
        yield Service(f"http://127.0.0.1:{server.port}", recorder)
    finally:
        server.stop()
