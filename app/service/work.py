"""Running engine steps: inline for small inputs, in a worker thread for large ones."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import anyio.to_thread

T = TypeVar("T")


class Worker:
    """CPU-heavy engine work on a large input must not stall the event loop."""

    def __init__(self, *, offload: bool) -> None:
        self._offload = offload

    async def __call__(self, fn: Callable[..., T], *args: Any) -> T:
        if self._offload:
            return await anyio.to_thread.run_sync(fn, *args)
        return fn(*args)
