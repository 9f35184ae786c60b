"""uvicorn's HTTP/1.1 protocols with a bound on the time a request's headers take.

uvicorn reads a request's headers before the app sees it and waits for them as long
as the client keeps sending: a client trickling a byte every few seconds holds its
connection open for good. This protocol closes a connection whose request has not
begun (its headers complete) within the header timeout, counted from the connection's
start and from the end of the previous response. The bound is a mixin, here
over uvicorn's httptools parser (C, several times faster than the pure-Python h11).

uvicorn offers no hook for this: its ``--http`` option takes a protocol class, and this
one extends ``HttpToolsProtocol``, whose module is not public API. What it relies on
(the four asyncio protocol methods it extends, ``cycle`` set once a request's headers
are complete, ``on_response_complete``, ``loop`` and ``transport``) is checked by
``tests/api/test_http_protocol.py``, which drives the class itself: an uvicorn release
that changes any of it fails there, not in production.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

# Until a worker's factory says otherwise (``bound_headers``): the setting's default.
_DEFAULT_TIMEOUT_S = 10.0


class _HeaderBound:
    """Close a connection whose next request's headers do not arrive in time. The parser
    sets ``cycle`` when a request's headers are complete."""

    # uvicorn makes the protocol in each worker from its class and hands it no settings
    # of ours: the worker's factory sets the bound on the class (``bound_headers``).
    header_timeout_s: float = _DEFAULT_TIMEOUT_S
    cycle: Any
    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        self._header_timer: asyncio.TimerHandle | None = None
        self._arm()

    def _arm(self) -> None:
        self._awaiting = self.cycle  # the cycle a new request will replace
        self._header_timer = self.loop.call_later(_HeaderBound.header_timeout_s,
                                                  self._too_slow)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _too_slow(self) -> None:
        self._header_timer = None
        if self.cycle is self._awaiting and not self.transport.is_closing():
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)  # type: ignore[misc]
        if self._header_timer is not None and self.cycle is not self._awaiting:
            self._disarm()  # a request began: its headers are in

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        self._disarm()
        if not self.transport.is_closing():
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)  # type: ignore[misc]


class BoundedHttpToolsProtocol(_HeaderBound, HttpToolsProtocol):
    """httptools' parser (C) with the header bound: what ``contextsynth serve`` runs."""


def bound_headers(timeout_s: float) -> None:
    """The header bound of every connection this process serves from now on; called by
    the worker's factory, with its settings, before uvicorn accepts a connection."""
    _HeaderBound.header_timeout_s = timeout_s
