"""A deadline for in-process async tests: fail with every task's stack, never hang.

An in-process test awaits the app through ``httpx.ASGITransport``, which has no
timeouts, so a call that never returns would hold the whole run until CI gives up
and says nothing of where. Past the deadline every task's stack is printed (before
anything is cancelled: code that swallows the cancellation still shows where it
waits), then the test's body is cancelled and the test fails.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any


def _awaiting(task: asyncio.Task[Any]) -> Iterator[str]:
    """Where the task waits, outermost first: its coroutine, then what that awaits, and
    so on (a task's own stack shows only the outermost frame of a suspended one)."""
    step: Any = task.get_coro()
    while step is not None:
        frame = next((getattr(step, a) for a in ("cr_frame", "gi_frame", "ag_frame")
                      if getattr(step, a, None) is not None), None)
        if frame is not None:
            yield f"  {frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}"
        step = next((getattr(step, a) for a in ("cr_await", "gi_yieldfrom", "ag_await")
                     if getattr(step, a, None) is not None), None)


def _print_tasks(seconds: float) -> None:
    print(f"--- still running after {seconds} s; where every task waits:", file=sys.stderr)
    for task in asyncio.all_tasks():
        print(f"{task.get_name()}:", *_awaiting(task), sep="\n", file=sys.stderr)


@asynccontextmanager
async def deadline(seconds: float) -> AsyncIterator[None]:
    loop = asyncio.get_running_loop()
    # A moment before the cancellation, so that the stacks are those of the hang.
    dump = loop.call_later(seconds * 0.99, _print_tasks, seconds)
    try:
        async with asyncio.timeout(seconds):
            yield
    except TimeoutError as exc:
        raise AssertionError(f"not done within {seconds} s: the tasks' stacks are on "
                             "stderr") from exc
    finally:
        dump.cancel()
