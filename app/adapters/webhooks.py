"""The webhook machinery of one process: emitter, outbox, and the pump that delivers."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Coroutine
from typing import Any

import aiohttp
from opentelemetry.trace import Tracer

from app.adapters.addresses import Resolve, check_url, delivery_connector, system_resolve
from app.adapters.events import Backlog, Deliverer, Emitter, Subscription
from app.adapters.metrics import Metrics
from app.adapters.outbox import Entry, MemoryOutbox, Outbox, RedisOutbox
from app.adapters.pump import Pump
from app.adapters.tracing import NO_TRACER
from app.settings import Settings

log = logging.getLogger(__name__)


class Webhooks:
    """Delivery runs on an event loop of its own, in a thread: on the requests' loop,
    a replica busy answering agents gave its deliveries a seventh of the rate it made
    events at (bench --webhooks); a thread of their own gets its share of the
    interpreter whenever it has work. Requests hand events over to that loop."""

    def __init__(self, subscriptions: list[Subscription], outbox: Outbox,
                 pump: Pump, *, stop_grace_s: float = 5.0,
                 resolve: Resolve | None = None) -> None:
        self.subscriptions = subscriptions
        # Set unless private addresses are allowed: the lookups deliveries connect by.
        self._resolve = resolve
        self.outbox = outbox
        self.pump = pump
        # Beyond the drain, how long stopping may take (closing connections, the outbox).
        self._stop_grace = stop_grace_s
        self.emitter = Emitter(subscriptions, self._accept)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    async def _accept(self, entry: Entry) -> None:
        loop = self._loop
        if loop is None:  # not started (no endpoint, or a test driving the pump itself)
            await self.pump.accept(entry)
            return
        await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self.pump.accept(entry),
                                                                   loop))

    async def start(self) -> None:
        if not self.subscriptions:
            return
        ready = threading.Event()

        def serve() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            self._loop = loop
            loop.call_soon(ready.set)
            loop.run_forever()
            # What a stop cut off is cancelled, with a moment to close what it opened.
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.wait(pending, timeout=1.0))
            loop.close()

        self._thread = threading.Thread(target=serve, name="webhooks", daemon=True)
        self._thread.start()
        await asyncio.to_thread(ready.wait)
        await self._on_loop(self._begin())

    async def _begin(self) -> None:
        # No pool limit: each endpoint's lane bounds its own connections.
        self.pump.start(aiohttp.ClientSession(connector=delivery_connector(self._resolve)))

    async def _end(self, drain_s: float) -> None:
        await self.pump.stop(drain_s)
        await self.pump.aclose_http()
        if isinstance(self.outbox, RedisOutbox):
            await self.outbox.aclose()

    async def _on_loop(self, work: Coroutine[Any, Any, None]) -> None:
        assert self._loop is not None
        await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(work, self._loop))

    async def stop(self, drain_s: float) -> None:
        """Deliver what is held within ``drain_s``; with Redis the rest waits for others."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            if isinstance(self.outbox, RedisOutbox):
                await self.outbox.aclose()
            return
        try:
            await asyncio.wait_for(self._on_loop(self._end(drain_s)),
                                   drain_s + self._stop_grace)
        except TimeoutError:
            # Shutdown must end within the pod's grace whatever a delivery or the outbox
            # is stuck on: what the pump still held is cut off (a shared outbox keeps it).
            log.warning("webhook delivery did not stop within %.0f s; cut off",
                        drain_s + self._stop_grace)
        self._loop = None  # events from now on are not delivered by this process
        loop.call_soon_threadsafe(loop.stop)
        await asyncio.to_thread(thread.join, 10)


def build_webhooks(settings: Settings, metrics: Metrics, tracer: Tracer = NO_TRACER,
                   ) -> Webhooks:
    for config in settings.webhooks:
        check_url(config.url, allow_private=settings.webhooks_allow_private)
    subscriptions = [Subscription(c) for c in settings.webhooks]
    outbox: Outbox = (RedisOutbox(settings.redis_url, claim_idle_s=settings.outbox_claim_idle_s,
                                  timeout_s=settings.redis_timeout_s,
                                  cluster=settings.redis_cluster, tracer=tracer)
                      if settings.redis_url else MemoryOutbox(settings.outbox_max_entries))
    backlog = Backlog(settings.outbox_max_entries, metrics)
    deliverer = Deliverer(subscriptions, outbox, metrics,
                          schedule=settings.webhook_retry_schedule_s,
                          timeout_s=settings.webhook_timeout_s,
                          public_only=not settings.webhooks_allow_private, tracer=tracer)
    pump = Pump(backlog, outbox, deliverer, metrics, subscriptions=len(subscriptions),
                width=settings.webhook_concurrency, pause_s=settings.redis_pause_s,
                shared=isinstance(outbox, RedisOutbox),
                journal_entries=settings.outbox_max_entries,
                put_timeout_s=settings.redis_timeout_s)
    return Webhooks(subscriptions, outbox, pump,
                    resolve=None if settings.webhooks_allow_private else system_resolve)
