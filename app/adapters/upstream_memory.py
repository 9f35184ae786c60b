"""An upstream in memory: the proxy's ``Transport`` answered by a function instead of a
server, as httpx's ``MockTransport`` answers a client.

Tests pass one to ``create_app(upstream=...)`` and see what the proxy sent (``sent``)
and how it read the answers (``finished``, ``left``), with no port, thread or socket.
The slots are the real ones, so a full pool behaves as it does in production.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from app.adapters.upstream import Slots, UpstreamAnswer, default_slots, returned


@dataclass(frozen=True, slots=True)
class Sent:
    """One request as the proxy sent it."""

    name: str
    method: str
    url: str
    headers: list[tuple[str, str]]
    body: bytes

    @property
    def path(self) -> str:
        return urlsplit(self.url).path

    def header(self, name: str) -> str | None:
        """The value of the first header of that name, in any case; None without one."""
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True, slots=True)
class UpstreamReply:
    """What the upstream answers: a status, headers and the body in chunks."""

    status: int = 200
    headers: Sequence[tuple[str, str]] = ()
    chunks: Sequence[bytes] = ()

    @classmethod
    def json(cls, value: Any, status: int = 200,
             headers: Sequence[tuple[str, str]] = ()) -> UpstreamReply:
        return cls(status, [("content-type", "application/json"), *headers],
                   [json.dumps(value).encode()])

    @classmethod
    def events(cls, events: Sequence[tuple[str | None, Any]],
               headers: Sequence[tuple[str, str]] = ()) -> UpstreamReply:
        """A server-sent event stream, a chunk per event: (event name or None, data)."""
        chunks = [((f"event: {name}\n" if name else "")
                   + f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n"
                   ).encode() for name, data in events]
        return cls(200, [("content-type", "text/event-stream"), *headers], chunks)


# Answers a request; may be async, and may raise what a transport raises (UpstreamFailed,
# UpstreamTimeout) to play an upstream that cannot be reached or stays silent.
Handler = Callable[[Sent], UpstreamReply | Awaitable[UpstreamReply]]


@dataclass
class MemoryUpstream:
    handler: Handler
    slots: Slots = field(default_factory=default_slots)
    sent: list[Sent] = field(default_factory=list)
    finished: int = 0  # answers read to their end
    left: int = 0  # answers whose reader left before their end
    closed: bool = False

    async def send(self, name: str, url: str, body: bytes,
                   headers: list[tuple[str, str]], method: str = "POST",
                   model: str | None = None) -> UpstreamAnswer:
        done = await self.slots.take(name)
        try:
            request = Sent(name, method, url, list(headers), body)
            self.sent.append(request)
            made = self.handler(request)
            reply = await made if inspect.isawaitable(made) else made
        except BaseException:
            done()
            raise
        return UpstreamAnswer(reply.status, returned(reply.headers), _body(reply.chunks),
                      self._ended, done)

    def _ended(self, finished: bool) -> None:
        if finished:
            self.finished += 1
        else:
            self.left += 1

    async def aclose(self) -> None:
        self.closed = True


async def _body(chunks: Sequence[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk
