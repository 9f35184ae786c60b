"""The webhook machinery of one process: emitter, outbox, and the pump that delivers."""

from __future__ import annotations

import httpx

from app.adapters.addresses import check_url, system_resolve
from app.adapters.events import Backlog, Deliverer, Emitter, Subscription
from app.adapters.metrics import Metrics
from app.adapters.outbox import MemoryOutbox, Outbox, RedisOutbox
from app.adapters.pump import Pump
from app.settings import Settings


class Webhooks:
    def __init__(self, subscriptions: list[Subscription], outbox: Outbox,
                 emitter: Emitter, pump: Pump) -> None:
        self.subscriptions = subscriptions
        self.outbox = outbox
        self.emitter = emitter
        self.pump = pump
        self._http: httpx.AsyncClient | None = None

    async def start(self) -> None:
        if not self.subscriptions:
            return
        self._http = httpx.AsyncClient(limits=httpx.Limits(max_connections=None))
        self.pump.start(self._http)

    async def stop(self, drain_s: float) -> None:
        """Deliver what is held within ``drain_s``; with Redis the rest waits for others."""
        if self._http is not None:
            await self.pump.stop(drain_s)
            await self._http.aclose()
        if isinstance(self.outbox, RedisOutbox):
            await self.outbox.aclose()


def build_webhooks(settings: Settings, metrics: Metrics) -> Webhooks:
    for config in settings.webhooks:
        check_url(config.url, allow_private=settings.webhooks_allow_private)
    subscriptions = [Subscription(c) for c in settings.webhooks]
    outbox: Outbox = (RedisOutbox(settings.redis_url, claim_idle_s=settings.outbox_claim_idle_s,
                                  timeout_s=settings.redis_timeout_s)
                      if settings.redis_url else MemoryOutbox(settings.outbox_max_entries))
    backlog = Backlog(settings.outbox_max_entries, metrics)
    deliverer = Deliverer(subscriptions, outbox, metrics,
                          schedule=settings.webhook_retry_schedule_s,
                          timeout_s=settings.webhook_timeout_s,
                          resolve=None if settings.webhooks_allow_private else system_resolve)
    pump = Pump(backlog, outbox, deliverer, metrics, subscriptions=len(subscriptions),
                width=settings.webhook_concurrency, pause_s=settings.redis_pause_s,
                shared=isinstance(outbox, RedisOutbox),
                journal_entries=settings.outbox_max_entries,
                put_timeout_s=settings.redis_timeout_s)
    return Webhooks(subscriptions, outbox, Emitter(subscriptions, pump.accept), pump)
