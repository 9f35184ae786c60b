"""Shutdown ends: a close stuck on a dead peer, even one that ignores its cancellation,
is left behind after its grace, and what comes after it still closes."""

import asyncio
import time

import pytest

from app.service.shutdown import close_all

pytestmark = pytest.mark.anyio


async def test_a_stuck_step_is_left_behind_and_the_next_still_runs(caplog):
    closed: list[str] = []
    release = asyncio.Event()

    async def stuck() -> None:
        while not release.is_set():  # swallows every cancellation, as a buggy client may
            try:
                await release.wait()
            except asyncio.CancelledError:
                continue

    async def broken() -> None:
        raise ConnectionError("peer gone")

    async def fine() -> None:
        closed.append("cache")

    started = time.monotonic()
    overran = await close_all([("the upstream pool", stuck), ("the LLM clients", broken),
                               ("the cache", fine)], grace_s=0.2)
    assert time.monotonic() - started < 5
    assert overran == ["the upstream pool"]
    assert closed == ["cache"]
    assert "the upstream pool did not end within 0.2 s" in caplog.text
    assert "the LLM clients failed: ConnectionError: peer gone" in caplog.text
    release.set()
    await asyncio.sleep(0)


async def test_steps_that_end_in_time_are_not_reported():
    async def quick() -> None:
        await asyncio.sleep(0.01)

    assert await close_all([("a", quick), ("b", quick)], grace_s=1.0) == []
