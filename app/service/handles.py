"""Expand handles: the originals of every dropped span, per tenant, until the TTL runs out."""

from __future__ import annotations

import asyncio
import json
import time
import zlib
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from app.adapters import jsoncodec
from app.adapters.cache import Cache, handle_key
from app.engine.compaction.base import Span
from app.engine.errors import HandlesUnavailable
from app.engine.footprint import footprint
from app.engine.transcript.formats import WireFormat
from app.engine.transcript.model import Transcript

# Re-save a handle this process saved within this share of the TTL only after it.
_RESAVE_SHARE = 0.5
_RECENT_MAX = 50_000
# Handles whose save the cache did not take are kept here, up to this many bytes.
_LOCAL_BYTES = 32_000_000
# A document past this size is stored compressed: a span of tool output shrinks several
# times, in Redis and in the in-process cache alike, and a 2 MB log no longer holds
# 2 MB of the worker's memory for the handle's TTL. A zlib stream starts with "x", a
# document with "{", so what older replicas stored reads as it always did.
_COMPRESS_BYTES = 16_384
# A document holding more than this (its footprint) takes milliseconds to write and
# compress: a worker thread does it (zlib lets go of the interpreter's lock, and the
# loop over pieces lets the event loop's thread in), not the event loop.
_COMPRESS_AWAY_BYTES = 1 << 20


def _payload(document: dict[str, Any]) -> bytes:
    """The document as stored: its JSON, compressed past ``_COMPRESS_BYTES``. Written and
    compressed a piece at a time, so a document of megabytes (the trace of a 15 MB
    request, 8 MB of JSON) is never held whole beside its compressed copy."""
    pieces = jsoncodec.dumps_pieces(document)
    head: list[bytes] = []
    size = 0
    for piece in pieces:
        head.append(piece)
        size += len(piece)
        if size > _COMPRESS_BYTES:
            break
    else:
        return b"".join(head)
    deflate = zlib.compressobj(1)
    out = [deflate.compress(piece) for piece in head]
    del head
    out += [deflate.compress(piece) for piece in pieces]
    out.append(deflate.flush())
    return b"".join(out)


class HandleStore:
    def __init__(self, cache: Cache, *, ttl_s: float, retry_s: float = 2.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._cache = cache
        self._ttl = ttl_s
        self._clock = clock
        # An agent resends its prefix every step; its spans need saving once per TTL,
        # and again whenever the cache may have lost them (a new generation).
        # When this process last saved each handle, and in which format (see save_spans).
        self._recent: dict[str, tuple[float, str]] = {}
        self._generation = cache.generation
        # Saves the cache did not take (Redis down): this replica can still expand them,
        # and they are saved again on the next call that makes them.
        self._local: OrderedDict[str, tuple[float, bytes]] = OrderedDict()
        self._local_bytes = 0
        self._retry_s = retry_s

    async def save_spans(self, tenant: str, wire: WireFormat, spans: Sequence[Span]) -> None:
        if self._cache.generation != self._generation:
            self._recent.clear()
            self._generation = self._cache.generation
        for span in spans:
            # The handle is the content's: the same span dropped by a caller of another
            # format is saved again, in that caller's format, so each caller expands it
            # in the format it speaks (the last one to drop it).
            if not span.originals or self._fresh(tenant, span.handle, wire.name):
                continue
            key = handle_key(tenant, span.handle)
            held = self._kept(key)
            if held is not None:  # made while the cache was down: try it again as it is
                await self._store(tenant, span.handle, key, held, wire.name)
                continue
            body = wire.render(Transcript(span.originals, wire.name))
            await self.save(tenant, span.handle, {"format": wire.name, "kind": span.kind,
                                                  **body})

    async def save(self, tenant: str, handle: str, document: dict[str, Any]) -> None:
        document = {"handle": handle, **document}
        if footprint(document) > _COMPRESS_AWAY_BYTES:
            payload = await asyncio.to_thread(_payload, document)
        else:
            payload = _payload(document)
        await self._store(tenant, handle, handle_key(tenant, handle), payload,
                          str(document.get("format", "")))

    async def _store(self, tenant: str, handle: str, key: str, payload: bytes,
                     form: str = "") -> None:
        await self._cache.set(key, payload, self._ttl)
        if not self._cache.healthy:  # not written: keep it here, and save it again later
            self._keep(key, payload)
            return
        self._drop(key)
        if len(self._recent) >= _RECENT_MAX:
            self._recent.clear()
        self._recent[f"{tenant}\0{handle}"] = (self._clock(), form)

    def _keep(self, key: str, payload: bytes) -> None:
        self._drop(key)
        self._local[key] = (self._clock() + self._ttl, payload)
        self._local_bytes += len(payload)
        while self._local_bytes > _LOCAL_BYTES and self._local:
            _, (_, gone) = self._local.popitem(last=False)
            self._local_bytes -= len(gone)

    def _drop(self, key: str) -> None:
        old = self._local.pop(key, None)
        if old is not None:
            self._local_bytes -= len(old[1])

    def _kept(self, key: str) -> bytes | None:
        item = self._local.get(key)
        if item is None or item[0] <= self._clock():
            return None
        return item[1]

    def _fresh(self, tenant: str, handle: str, form: str) -> bool:
        saved = self._recent.get(f"{tenant}\0{handle}")
        return saved is not None and saved[1] == form \
            and self._clock() - saved[0] < self._ttl * _RESAVE_SHARE

    async def load(self, tenant: str, handle: str) -> dict[str, Any] | None:
        """The handle's document; None when no store has it. Raises HandlesUnavailable
        when the cache cannot be reached and this replica does not hold it either."""
        key = handle_key(tenant, handle)
        raw = await self._cache.get(key) or self._kept(key)
        if raw is None and not self._cache.healthy:
            raise HandlesUnavailable(
                "the store of expand handles (Redis) cannot be reached, so this handle cannot "
                "be looked up now; it is not lost if it was saved. Retry shortly.",
                retry_after=self._retry_s)
        if raw is None:
            return None
        try:
            document = json.loads(zlib.decompress(raw) if raw[:1] == b"x" else raw)
        except (ValueError, zlib.error):
            return None
        return document if isinstance(document, dict) else None
