"""The cache: a small Protocol, an in-memory default, Redis, and the fail-open rule.

Keys are ``cs:v2:{tenant}:{job}:{digest}`` with no hash tag: no command uses two of
them at once (a result and its single-flight lock are set and read one by one), so on
a Redis Cluster they spread over every slot, a single tenant's too. (v1 put the
tenant in a hash tag: one tenant, the common deployment, used one master.)
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Protocol

from app.adapters.metrics import Metrics
from app.engine.memo import CacheUsage

log = logging.getLogger(__name__)
KEY_PREFIX = "cs:v2"
# A process's marker in Redis lives this long: a longer-lived process finds it gone
# once a day, and saves its handles again, which costs nothing but the writes.
_MARKER_TTL_S = 86_400.0


def cache_key(tenant: str, job: str, material: Any) -> str:
    """A key for ``material`` (any JSON value) that tenants never share."""
    canonical = json.dumps(material, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    digest = hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{KEY_PREFIX}:{plain(tenant)}:{job}:{digest}"


def handle_key(tenant: str, handle: str) -> str:
    return f"{KEY_PREFIX}:{plain(tenant)}:expand:{handle}"


def receipt_key(tenant: str, request_id: str) -> str:
    """A proxied request's receipt, by the request id it was answered with."""
    return f"{KEY_PREFIX}:{plain(tenant)}:receipt:{plain(request_id)}"


def expansions_key(tenant: str, conversation: str) -> str:
    """The expand rounds a proxied conversation had, which its client never saw."""
    return f"{KEY_PREFIX}:{plain(tenant)}:expanded:{plain(conversation)}"


def plain(part: str) -> str:
    """``part`` with no brace, so that it cannot make a hash tag (reversibly: % too)."""
    return part.replace("%", "%25").replace("{", "%7B").replace("}", "%7D")


class Cache(Protocol):
    @property
    def healthy(self) -> bool:
        """False while the store is failing (its last call did not get through)."""
        ...

    @property
    def generation(self) -> int:
        """Changes whenever what the store held may have been lost (it came back after an
        outage, or restarted empty): what was saved once is saved again."""
        ...

    async def start(self) -> None:
        """Begin any watching in the background (the app's lifespan calls it)."""
        ...

    async def get(self, key: str) -> bytes | None: ...

    async def set(self, key: str, value: bytes, ttl_s: float) -> None: ...

    async def add(self, key: str, value: bytes, ttl_s: float) -> bool:
        """Set only if absent (a lock); True when this call set it."""
        ...

    async def delete(self, key: str) -> None: ...

    async def ping(self) -> None: ...

    async def aclose(self) -> None: ...


class MemoryCache:
    """Bounded TTL LRU, the embedded default (one process, nothing shared): at most
    ``max_entries`` items and ``max_bytes`` of keys and values, the least recently used
    going first. Expand handles live here without Redis, so the bound is in bytes: at
    10,000 entries, a thousand agents' spans pushed out the older handles of their
    newest receipts long before their hour."""

    def __init__(self, max_entries: int = 1_000_000, max_bytes: int = 128 << 20,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._items: OrderedDict[str, tuple[float, bytes]] = OrderedDict()
        self._max = max_entries
        self._max_bytes = max_bytes
        self._bytes = 0
        self._clock = clock
        self._lock = threading.Lock()

    @property
    def bytes_held(self) -> int:
        return self._bytes

    def usage(self) -> CacheUsage:
        """The bytes and entries held (its hits and misses are the cache metrics')."""
        u = CacheUsage()
        u.held, u.entries = self._bytes, len(self._items)
        return u

    def _live(self, key: str) -> bytes | None:
        item = self._items.get(key)
        if item is None:
            return None
        if item[0] <= self._clock():
            self._remove(key)
            return None
        self._items.move_to_end(key)
        return item[1]

    def _remove(self, key: str) -> None:
        item = self._items.pop(key, None)
        if item is not None:
            self._bytes -= _weight(key, item[1])

    def _put(self, key: str, value: bytes, ttl_s: float) -> None:
        self._remove(key)
        self._items[key] = (self._clock() + ttl_s, value)
        self._bytes += _weight(key, value)
        while self._items and (len(self._items) > self._max or self._bytes > self._max_bytes):
            old, (_, gone) = self._items.popitem(last=False)
            self._bytes -= _weight(old, gone)

    @property
    def healthy(self) -> bool:
        return True

    @property
    def generation(self) -> int:
        return 0  # it loses nothing while the process lives

    async def start(self) -> None:
        return None

    async def get(self, key: str) -> bytes | None:
        with self._lock:
            return self._live(key)

    async def set(self, key: str, value: bytes, ttl_s: float) -> None:
        with self._lock:
            self._put(key, value, ttl_s)

    async def add(self, key: str, value: bytes, ttl_s: float) -> bool:
        with self._lock:
            if self._live(key) is not None:
                return False
            self._put(key, value, ttl_s)
            return True

    async def delete(self, key: str) -> None:
        with self._lock:
            self._remove(key)

    async def ping(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


# What an item costs beside its key and value: the tuple, the float, the dict slot and
# the objects' headers, about this many bytes.
_ITEM_OVERHEAD = 200


def _weight(key: str, value: bytes) -> int:
    return len(key) + len(value) + _ITEM_OVERHEAD


class FailOpenCache:
    """Cache trouble never fails a request: it is counted, logged once, and skipped.

    Errors are counted here; hits and misses by the callers, which know what a lookup
    was for.

    After an error the inner cache is left alone. Once ``start`` has run, a watcher
    in the background looks at it every ``pause_s``: while it is down, whether it is
    back (no request waits on a dead Redis after the first that found it dead); while
    it is up, whether it lost its data, by a marker key this process left there
    (Redis restarted empty, or was flushed). Either way ``generation`` moves on, and
    what was saved once (expand handles) is saved again. Without the watcher a
    request tries the inner cache again once ``pause_s`` has passed.
    """

    def __init__(self, inner: Cache, metrics: Metrics, *, name: str = "redis",
                 pause_s: float = 2.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._inner = inner
        self._metrics = metrics
        self._name = name
        self._pause = pause_s
        self._clock = clock
        self._down_since: float | None = None
        self._retry_at = 0.0
        self.last_error: str | None = None
        self._generation = 0
        self._watcher: asyncio.Task[None] | None = None
        # One per process: another replica re-creating a shared marker would hide the
        # loss from this one. It outlives a day's checks only if refreshed by a loss.
        self._marker = f"{KEY_PREFIX}:alive:{uuid.uuid4().hex}"
        self._marked = False

    @property
    def healthy(self) -> bool:
        return self._down_since is None

    @property
    def generation(self) -> int:
        return self._generation

    async def start(self) -> None:
        if self._watcher is None:
            await self.check()  # the marker is there before the first handle is saved
            self._watcher = asyncio.create_task(self._watch())

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self._pause)
            await self.check()

    async def check(self) -> None:
        """One look at the inner cache, as the watcher takes it every ``pause_s``."""
        try:
            created = await self._inner.add(self._marker, b"1", _MARKER_TTL_S)
        except Exception as exc:
            self._failed(exc)
            return
        lost = self._down_since is not None or (created and self._marked)
        self._recovered()
        if lost:
            self._generation += 1
            log.warning("cache %s may have lost what it held: saving handles again",
                        self._name)
        self._marked = True

    def _skip(self) -> bool:
        if self._down_since is None:
            return False
        return self._watcher is not None or self._clock() < self._retry_at

    def _failed(self, exc: Exception) -> None:
        self._metrics.cache_requests.labels("error").inc()
        self.last_error = f"{type(exc).__name__}: {exc}"[:200]
        if self._down_since is None:
            self._down_since = self._clock()
            log.warning("cache %s unavailable, carrying on uncached: %s", self._name,
                        self.last_error)
        self._retry_at = self._clock() + self._pause

    def _recovered(self) -> None:
        if self._down_since is not None:
            log.warning("cache %s is back after %.1f s", self._name,
                        self._clock() - self._down_since)
            self._down_since = None
            self.last_error = None

    async def get(self, key: str) -> bytes | None:
        if self._skip():
            self._metrics.cache_requests.labels("error").inc()
            return None
        try:
            value = await self._inner.get(key)
        except Exception as exc:
            self._failed(exc)
            return None
        self._recovered()
        return value

    async def set(self, key: str, value: bytes, ttl_s: float) -> None:
        if self._skip():
            return
        try:
            await self._inner.set(key, value, ttl_s)
        except Exception as exc:
            self._failed(exc)
        else:
            self._recovered()

    async def add(self, key: str, value: bytes, ttl_s: float) -> bool:
        if self._skip():
            return True  # no shared lock to be had: go ahead alone
        try:
            added = await self._inner.add(key, value, ttl_s)
        except Exception as exc:
            self._failed(exc)
            return True
        self._recovered()
        return added

    async def delete(self, key: str) -> None:
        if self._skip():
            return
        try:
            await self._inner.delete(key)
        except Exception as exc:
            self._failed(exc)

    async def ping(self) -> None:
        try:
            await self._inner.ping()
        except Exception as exc:
            self._failed(exc)
        else:
            self._recovered()

    async def aclose(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
            self._watcher = None
        await self._inner.aclose()
