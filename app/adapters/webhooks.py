"""The webhook machinery of one process: emitter, outbox, and a background deliverer."""

from __future__ import annotations

import asyncio
import contextlib
import time

import httpx

from app.adapters.addresses import check_url, system_resolve
from app.adapters.events import Deliverer, Emitter, Subscription
from app.adapters.metrics import Metrics
from app.adapters.outbox import MemoryOutbox, Outbox, RedisOutbox
from app.settings import Settings


class Webhooks:
    def __init__(self, subscriptions: list[Subscription], outbox: Outbox,
                 emitter: Emitter, deliverer: Deliverer) -> None:
        self.subscriptions = subscriptions
        self.outbox = outbox
        self.emitter = emitter
        self.deliverer = deliverer
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._http: httpx.AsyncClient | None = None

    async def start(self) -> None:
        if not self.subscriptions:
            return
        self._http = httpx.AsyncClient()
        self._stop.clear()
        self._task = asyncio.create_task(self.deliverer.run(self._http, self._stop))

    async def stop(self, drain_s: float) -> None:
        """Deliver what is ready within ``drain_s``; with Redis the rest waits for others."""
        if self._task is None or self._http is None:
            await self._close_outbox()
            return
        self._stop.set()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        deadline = time.monotonic() + drain_s
        while time.monotonic() < deadline:
            try:
                if await asyncio.wait_for(self.deliverer.round(self._http, 0.05),
                                          timeout=max(deadline - time.monotonic(), 0.01)) == 0:
                    break
            except Exception:
                break
        await self._http.aclose()
        await self._close_outbox()

    async def _close_outbox(self) -> None:
        if isinstance(self.outbox, RedisOutbox):
            await self.outbox.aclose()


def build_webhooks(settings: Settings, metrics: Metrics) -> Webhooks:
    for config in settings.webhooks:
        check_url(config.url, allow_private=settings.webhooks_allow_private)
    subscriptions = [Subscription(c) for c in settings.webhooks]
    outbox: Outbox = (RedisOutbox(settings.redis_url, claim_idle_s=settings.outbox_claim_idle_s,
                                  timeout_s=settings.redis_timeout_s)
                      if settings.redis_url else MemoryOutbox(settings.outbox_max_entries))
    emitter = Emitter(subscriptions, outbox, metrics, pause_s=settings.redis_pause_s)
    deliverer = Deliverer(subscriptions, outbox, metrics,
                          schedule=settings.webhook_retry_schedule_s,
                          timeout_s=settings.webhook_timeout_s,
                          resolve=None if settings.webhooks_allow_private else system_resolve)
    return Webhooks(subscriptions, outbox, emitter, deliverer)
