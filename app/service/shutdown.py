"""Closing what the app opened, each step within a bound.

A pod has a grace period to stop in, and a test a run to finish in: a client's close
that waits on a dead peer, or a task that swallows its cancellation, must not hold
either. Each step gets ``grace_s``; one that overruns is logged, cancelled and left
behind (never awaited again), and the next step runs all the same.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

log = logging.getLogger("contextsynth.shutdown")

Step = tuple[str, Callable[[], Awaitable[None]]]


async def close_all(steps: Sequence[Step], grace_s: float) -> list[str]:
    """Run each step in turn; return the names of those that did not end in time."""
    overran = []
    for name, step in steps:
        task = asyncio.ensure_future(step())
        done, _ = await asyncio.wait({task}, timeout=grace_s)
        if not done:
            task.cancel()
            overran.append(name)
            log.warning("shutdown: %s did not end within %.1f s; left behind", name, grace_s)
        elif not task.cancelled() and (exc := task.exception()) is not None:
            log.warning("shutdown: %s failed: %s: %s", name, type(exc).__name__, exc)
    return overran
