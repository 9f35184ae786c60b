"""The scripted upstream: a loopback server that speaks the wires' APIs and asks a
``Player`` for each model turn. It records every request it received (what the
provider would have got from the proxy) and every error its player raised.

    with ScriptedUpstream([AnthropicWire()], player) as upstream:
        ... point the proxy at upstream.url ...
    upstream.calls  # the model requests, in order: Exchange(path, headers, body, seen, turn)
"""

from __future__ import annotations

import json
import threading
import traceback
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.agents.script import Player, Seen, Turn
from tests.agents.wire import Event, Reply, Wire
from tests.support.threaded import ThreadedServer

MODELS = ("claude-sonnet-4-5", "claude-haiku-4-5", "gpt-5-codex", "gpt-5", "gemini-2.5-pro")


@dataclass
class Exchange:
    """One request the upstream received, and (for a model call) the turn it answered."""

    path: str
    method: str
    headers: dict[str, str]
    body: Any
    wire: str | None = None
    seen: Seen | None = None
    turn: Turn | None = None
    status: int = 200


@dataclass
class Failure:
    path: str
    error: str


def _sse(events: list[Event]) -> AsyncIterator[bytes]:
    async def stream() -> AsyncIterator[bytes]:
        for name, data in events:
            text = data if isinstance(data, str) else json.dumps(data)
            yield ((f"event: {name}\n" if name else "") + f"data: {text}\n\n").encode()
    return stream()


def _response(reply: Reply) -> Response:
    if reply.events is not None:
        return StreamingResponse(_sse(reply.events), status_code=reply.status,
                                 media_type="text/event-stream")
    return JSONResponse(reply.body, status_code=reply.status)


@dataclass
class ScriptedUpstream:
    wires: list[Wire]
    player: Player
    exchanges: list[Exchange] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)

    def __post_init__(self) -> None:
        # The player keeps its place in the script: one turn at a time, even when a
        # program sends two requests at once.
        self._lock = threading.Lock()
        routes = [Route(path, self._turn_handler(wire), methods=["POST"])
                  for wire in self.wires for path in wire.paths]
        routes.append(Route("/{path:path}", self._other, methods=["GET", "POST", "HEAD"]))
        self._served = ThreadedServer(Starlette(routes=routes), name="the scripted upstream")
        self.port = self._served.port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def calls(self) -> list[Exchange]:
        """The model calls (requests a wire read and a player answered)."""
        return [e for e in self.exchanges if e.seen is not None]

    def _turn_handler(self, wire: Wire) -> Any:
        async def handle(request: Request) -> Response:
            body = await request.json()
            exchange = Exchange(request.url.path, "POST", dict(request.headers), body, wire.name)
            self.exchanges.append(exchange)
            try:
                seen = wire.read(request.url.path, body, dict(request.query_params))
                with self._lock:
                    turn = self.player.play(seen)
                reply = wire.reply(seen, turn)
            except Exception as error:  # the test reports it; the program sees a 400
                self.failures.append(Failure(request.url.path, traceback.format_exc()))
                exchange.status = 400
                return JSONResponse({"type": "error", "error": {
                    "type": "invalid_request_error", "message": f"scripted upstream: {error}"}},
                    status_code=400)
            exchange.seen, exchange.turn = seen, turn
            return _response(reply)
        return handle

    async def _other(self, request: Request) -> Response:
        raw = await request.body()
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode(errors="replace")
        path = request.url.path
        exchange = Exchange(path, request.method, dict(request.headers), body)
        self.exchanges.append(exchange)
        if request.method == "POST":
            for wire in self.wires:
                reply = wire.other(path, body if isinstance(body, dict) else {})
                if reply is not None:
                    return _response(reply)
        elif path.rstrip("/").endswith("/models"):
            # OpenAI's list and Anthropic's in one: each client reads its own fields.
            data = [{"id": m, "object": "model", "created": 1, "owned_by": "scripted",
                     "type": "model", "display_name": m, "created_at": "2025-01-01T00:00:00Z"}
                    for m in MODELS]
            return JSONResponse({"object": "list", "data": data, "has_more": False,
                                 "first_id": MODELS[0], "last_id": MODELS[-1]})
        exchange.status = 404
        return JSONResponse({"error": {"message": f"the scripted upstream has no {path}"}},
                            status_code=404)

    def __enter__(self) -> ScriptedUpstream:
        self._served.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._served.stop()
