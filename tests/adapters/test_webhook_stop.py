"""Stopping webhook delivery ends within the drain and a grace, whatever a delivery or
the outbox is stuck on: a pod's shutdown must not outlast its grace period."""

import asyncio
import time

import pytest

from app.adapters.events import Subscription, WebhookConfig
from app.adapters.outbox import MemoryOutbox
from app.adapters.webhooks import Webhooks
from tests.support.receiver import SECRET

pytestmark = pytest.mark.anyio


class StuckPump:
    """A pump whose stop never returns (a delivery hung on a dead connection)."""

    def __init__(self) -> None:
        self.http = None
        self.cancelled = False

    def start(self, http) -> None:
        self.http = http

    async def stop(self, drain_s: float) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            self.cancelled = True
            await self.http.close()

    async def aclose_http(self) -> None:
        await self.http.close()


async def test_a_stuck_stop_is_cut_off_after_the_drain_and_the_grace(caplog):
    pump = StuckPump()
    subscription = Subscription(WebhookConfig(url="https://hooks.example.com/in",
                                              secret=SECRET))
    webhooks = Webhooks([subscription], MemoryOutbox(10), pump, stop_grace_s=0.2)
    await webhooks.start()
    began = time.monotonic()
    await webhooks.stop(0.1)
    assert time.monotonic() - began < 3
    assert pump.cancelled
    assert "did not stop within" in caplog.text
