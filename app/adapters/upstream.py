"""Forwarding a provider request as it came, and its answer back as it came.

The proxy's only change to a request is its conversation; everything else the caller
sent (the provider key, version and beta headers, the SDK's own headers) goes to the
upstream untouched, and the upstream's status, headers and body come back the same,
a stream chunk by chunk as it arrives. Only hop-by-hop headers, which belong to one
connection, and contextsynth's own are left out.

The proxy sends through the ``Transport`` port. ``Upstream`` is its HTTP adapter; its
client is aiohttp's: its HTTP parser is C, where httpx parses HTTP/1.1 in Python (h11);
measured on loopback, the first byte of an answer came in 0.45 ms against 0.97, and
the time the proxy adds to a first byte is what its users wait for. ``upstream_memory``
holds the in-memory fake beside it, for tests, as httpx ships ``MockTransport``.
"""

from __future__ import annotations

import asyncio
import logging
import math
import weakref
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

import aiohttp

from app.engine.errors import UpstreamBusy, UpstreamFailed, UpstreamTimeout

# Hop-by-hop (RFC 9110, section 7.6.1), and what the new request and body set afresh.
_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization",
                  "te", "trailer", "transfer-encoding", "upgrade", "host", "content-length",
                  "accept-encoding", "content-encoding"})
OWN_PREFIX = "x-contextsynth-"
log = logging.getLogger(__name__)


def forwarded(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The caller's headers to send on, without hop-by-hop ones and contextsynth's."""
    return [(k, v) for k, v in headers
            if k.lower() not in _HOP and not k.lower().startswith(OWN_PREFIX)]


# Set by the server that answers the client (uvicorn adds its own to every answer): the
# upstream's would go out beside them, each header twice.
_RESET = frozenset({"date", "server"})


def returned(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The upstream's headers to hand back (rate limits, retry-after, request ids...),
    every one of them (a name may come more than once) in the case it came in."""
    return [(k, v) for k, v in headers if k.lower() not in _HOP and k.lower() not in _RESET]


class Slots:
    """Upstream requests in flight, bounded per worker, with a bounded queue in front.

    A stream holds its slot until its last chunk, so the bound is on connections, not
    on requests per second. A request that finds every slot taken waits, if fewer than
    ``queue`` already do, for at most ``wait_s``; else it is refused at once. Either
    way it was never sent: UpstreamBusy says so, and when to try again.
    """

    def __init__(self, size: int, queue: int, wait_s: float) -> None:
        self.size = size
        self._queue = queue
        self._wait = wait_s
        self._free = asyncio.Semaphore(size)
        self._waiting = 0

    async def take(self, name: str) -> Callable[[], None]:
        """Wait for a slot; the function returned gives it back (once, however often it
        is called)."""
        if self._free.locked():
            if self._waiting >= self._queue:
                raise self._busy(name, f"all {self.size} upstream connections are in use "
                                       f"and {self._waiting} requests are waiting")
            self._waiting += 1
            try:
                async with asyncio.timeout(self._wait):
                    await self._free.acquire()
            except TimeoutError:
                raise self._busy(name, f"no upstream connection came free within "
                                       f"{self._wait:g} s") from None
            finally:
                self._waiting -= 1
        else:
            await self._free.acquire()
        given = False

        def give_back() -> None:
            nonlocal given
            if not given:
                given = True
                self._free.release()
        return give_back

    def _busy(self, name: str, why: str) -> UpstreamBusy:
        return UpstreamBusy(
            f"{why}; the request was not sent to {name}. Retry it after the time in "
            "Retry-After, or raise CONTEXTSYNTH_PROXY_MAX_CONNECTIONS.", upstream=name,
            retry_after=max(1.0, math.ceil(self._wait / 2)))


def _ended(finished: bool) -> None:
    """An answer's body with nothing to let go of when it ends."""


def default_slots() -> Slots:
    """The slots of a transport made without settings (tests, tools): 100 connections,
    as many waiting, 10 s each."""
    return Slots(100, 100, 10.0)


@dataclass
class UpstreamAnswer:
    """An upstream's status and headers, and its body as it comes (read it once, with
    ``chunks`` or ``read``)."""

    status: int
    headers: list[tuple[str, str]]
    body: AsyncIterator[bytes]
    # Called once when the body ends: True when it was read to its end, False when the
    # reader left before (the transport then drops the connection instead of reusing it).
    ended: Callable[[bool], None] = _ended
    done: Callable[[], None] = field(default=lambda: None)  # gives the slot back

    def __post_init__(self) -> None:
        # An answer whose chunks are never read (its caller left before the stream
        # began) gives its slot back when it is dropped; reading to the end, or
        # leaving mid-stream, gives it back at once.
        weakref.finalize(self, self.done)

    async def read(self) -> bytes:
        """The whole answer (the proxy reads it when it may answer a call itself)."""
        return b"".join([chunk async for chunk in self.chunks()])

    async def chunks(self) -> AsyncIterator[bytes]:
        finished = False
        try:
            async for chunk in self.body:
                yield chunk
            finished = True
        finally:
            self.ended(finished)
            self.done()


class Transport(Protocol):
    """Where the proxy sends a provider request: ``Upstream`` over HTTP, or
    ``upstream_memory.MemoryUpstream`` in tests."""

    @property
    def slots(self) -> Slots: ...

    async def send(self, name: str, url: str, body: bytes,
                   headers: list[tuple[str, str]], method: str = "POST",
                   model: str | None = None) -> UpstreamAnswer:
        """The upstream's answer, its body still to be read (``model``: the model the
        request asks for, where the caller read it, for traces). Raises UpstreamBusy when no
        slot came free (the request was not sent), UpstreamFailed when the upstream
        could not be reached, UpstreamTimeout when it did not answer in time."""
        ...

    async def aclose(self) -> None: ...


def _dropped_unanswered(exc: aiohttp.ClientError) -> bool:
    """Whether the connection closed under a request before any answer came: the server
    went away or reset it. Not a connect that failed (sending again would fail the same)."""
    return (isinstance(exc, (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError))
            and not isinstance(exc, aiohttp.ClientConnectorError))


class Upstream:
    """One connection pool for every upstream, made on first use (it belongs to the
    running event loop); the app closes it on shutdown."""

    def __init__(self, timeout_s: float, slots: Slots | None = None) -> None:
        # A stream may run long: the bound is on the wait for each read, not the whole.
        # The wait for a pooled connection is the slots' to bound, not aiohttp's (its
        # "connect" timeout counts that wait, and turned a full pool into 504s).
        self._timeout = aiohttp.ClientTimeout(total=None, connect=None, sock_connect=10.0,
                                              sock_read=timeout_s)
        self._timeout_s = timeout_s
        self._slots = slots or default_slots()
        self._session: aiohttp.ClientSession | None = None

    @property
    def slots(self) -> Slots:
        return self._slots

    async def send(self, name: str, url: str, body: bytes,
                   headers: list[tuple[str, str]], method: str = "POST",
                   model: str | None = None) -> UpstreamAnswer:
        if self._session is None:
            # As many pooled connections as slots: a request holding a slot never waits
            # inside aiohttp.
            connector = aiohttp.TCPConnector(limit=self._slots.size, limit_per_host=0)
            self._session = aiohttp.ClientSession(timeout=self._timeout, connector=connector,
                                                  auto_decompress=False)
        done = await self._slots.take(name)
        try:
            return await self._send(name, url, body, headers, done, method)
        except BaseException:
            done()
            raise

    async def _send(self, name: str, url: str, body: bytes, headers: list[tuple[str, str]],
                    done: Callable[[], None], method: str) -> UpstreamAnswer:
        assert self._session is not None
        try:
            try:
                response = await self._request(url, body, headers, method)
            except aiohttp.ClientError as exc:
                if not _dropped_unanswered(exc):
                    raise
                # A pooled connection the upstream had closed while idle (a server's
                # keep-alive often ends at 5 s, aiohttp keeps one for 15): the request
                # met a closed socket and had no answer. Once more, on a fresh connection,
                # as the providers' own SDKs would retry it.
                log.info("upstream %s dropped a connection before answering (%s); sent "
                         "again", name, type(exc).__name__)
                response = await self._request(url, body, headers, method)
        except TimeoutError as exc:
            raise UpstreamTimeout(f"{name} did not answer within {self._timeout_s:g} s.",
                                  upstream=name) from exc
        except aiohttp.ClientError as exc:
            # Where it is (an internal address, often) is the operator's to read, not the
            # caller's; without the query, where Gemini's key may travel.
            log.warning("upstream %s at %s could not be reached: %s", name,
                        url.split("?", 1)[0], type(exc).__name__)
            raise UpstreamFailed(f"{name} could not be reached ({type(exc).__name__}); the "
                                 "service's operator can check "
                                 f"CONTEXTSYNTH_PROXY_{name.upper()}_URL.",
                                 upstream=name) from exc

        def ended(finished: bool) -> None:
            if finished:
                response.release()  # the connection goes back to the pool
            else:
                response.close()  # the caller left mid-answer: drop the upstream too

        return UpstreamAnswer(response.status, returned(response.headers.items()),
                              response.content.iter_any(), ended, done)

    async def _request(self, url: str, body: bytes, headers: list[tuple[str, str]],
                       method: str) -> aiohttp.ClientResponse:
        assert self._session is not None
        # The body is sent as bytes, uncompressed both ways: what was sent is what the
        # upstream reads, and its answer needs no decoding on the way back.
        return await self._session.request(
            method, url, data=body or None,
            headers=[*headers, ("accept-encoding", "identity")], allow_redirects=False)

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
