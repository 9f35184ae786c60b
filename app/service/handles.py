"""Expand handles: the originals of every dropped span, per tenant, until the TTL runs out."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from app.cache import Cache, handle_key
from app.engine.compaction import Span
from app.engine.formats import WireFormat
from app.engine.transcript import Transcript

# Re-save a handle this process saved within this share of the TTL only after it.
_RESAVE_SHARE = 0.5
_RECENT_MAX = 50_000


class HandleStore:
    def __init__(self, cache: Cache, *, ttl_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._cache = cache
        self._ttl = ttl_s
        self._clock = clock
        # An agent resends its prefix every step; its spans need saving once per TTL.
        self._recent: dict[str, float] = {}

    async def save_spans(self, tenant: str, wire: WireFormat, spans: Sequence[Span]) -> None:
        for span in spans:
            if not span.originals or self._fresh(tenant, span.handle):
                continue
            body = wire.render(Transcript(span.originals, wire.name))
            await self.save(tenant, span.handle, {"format": wire.name, "kind": span.kind,
                                                  **body})

    async def save(self, tenant: str, handle: str, document: dict[str, Any]) -> None:
        payload = json.dumps({"handle": handle, **document}, ensure_ascii=False).encode()
        await self._cache.set(handle_key(tenant, handle), payload, self._ttl)
        if len(self._recent) >= _RECENT_MAX:
            self._recent.clear()
        self._recent[f"{tenant}\0{handle}"] = self._clock()

    def _fresh(self, tenant: str, handle: str) -> bool:
        saved = self._recent.get(f"{tenant}\0{handle}")
        return saved is not None and self._clock() - saved < self._ttl * _RESAVE_SHARE

    async def load(self, tenant: str, handle: str) -> dict[str, Any] | None:
        raw = await self._cache.get(handle_key(tenant, handle))
        if raw is None:
            return None
        try:
            document = json.loads(raw)
        except ValueError:
            return None
        return document if isinstance(document, dict) else None
