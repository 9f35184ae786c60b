"""Running engine steps: inline for small inputs, in a worker thread for large ones, and
only as many large ones at once as the worker's memory holds."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import anyio.to_thread

from app.engine.errors import Overloaded

# Measured with the largest bodies each job accepts (bench --hostile): a request holds
# 11 to 24 bytes of memory per byte of body while it runs (parsed JSON, the transcript,
# tokens, the answer). Budgets are sized with this many.
MEMORY_PER_BODY_BYTE = 16
# What a worker holds before any request besides its caches (whose bytes are planned,
# see ``cache_plan``): the interpreter, the modules, the tokenizer.
BASE_MEMORY_BYTES = 128 << 20

T = TypeVar("T")


class Worker:
    """CPU-heavy engine work on a large input must not stall the event loop."""

    def __init__(self, *, offload: bool) -> None:
        self._offload = offload

    async def __call__(self, fn: Callable[..., T], *args: Any) -> T:
        if self._offload:
            return await anyio.to_thread.run_sync(fn, *args)
        return fn(*args)


def large_requests(memory_bytes: int | None, max_body_bytes: int, cache_bytes: int) -> int:
    """How many of the largest requests fit in a worker's memory at once, beside its
    caches (at least one); four when the memory is not known."""
    if memory_bytes is None:
        return 4
    spare = memory_bytes - BASE_MEMORY_BYTES - cache_bytes
    return max(1, spare // (max_body_bytes * MEMORY_PER_BODY_BYTE))


def body_budget(memory_bytes: int | None, max_body_bytes: int, cache_bytes: int) -> int:
    """The largest body one request may send: the configured limit, or less when one
    request that large would not fit in the worker's memory beside its caches."""
    if memory_bytes is None:
        return max_body_bytes
    fits = (memory_bytes - BASE_MEMORY_BYTES - cache_bytes) // MEMORY_PER_BODY_BYTE
    return max(1024, min(max_body_bytes, fits))


class LargeRequests:
    """At most ``slots`` large requests at once: what fills a worker's memory is how
    many run together, not how fast they come. One that finds every slot taken waits
    up to ``wait_s``, then gets a 503 with Retry-After; small requests never wait."""

    def __init__(self, slots: int, wait_s: float) -> None:
        self.slots = slots
        self._free = asyncio.Semaphore(slots)
        self._wait = wait_s

    @asynccontextmanager
    async def admitted(self) -> AsyncIterator[None]:
        try:
            async with asyncio.timeout(self._wait):
                await self._free.acquire()
        except TimeoutError:
            raise Overloaded(
                f"{self.slots} large requests are running on this worker, as many as its "
                f"memory allows, and none finished within {self._wait:g} s. Retry after "
                "Retry-After, send a shorter transcript, or raise the memory "
                "(CONTEXTSYNTH_MEMORY_LIMIT_BYTES).",
                retry_after=max(1.0, math.ceil(self._wait / 2))) from None
        try:
            yield
        finally:
            self._free.release()
