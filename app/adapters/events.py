"""Webhook events: the envelope, subscriptions, signing, emitting and delivering.

The body is a CloudEvents 1.0 structured JSON document (``tenant`` as an
extension attribute) signed whole with Standard Webhooks. Jobs only enqueue;
a background deliverer posts, retries on the Standard Webhooks schedule
(honouring Retry-After on 429/502/504, never following redirects, disabling
an endpoint that answers 410) and dead-letters what never gets through.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, Field, SecretStr
from standardwebhooks import Webhook

from app.adapters.addresses import PrivateAddress, Resolve, check_resolved
from app.adapters.metrics import Metrics
from app.adapters.outbox import Entry, Outbox
from app.context import request_id

log = logging.getLogger(__name__)
EVENT_TYPES = ("context.synthesized", "history.compressed", "trace.summarized",
               "rescue.completed", "fallback.notice", "recall.summarized",
               "reflection.recorded")
# Standard Webhooks' schedule after the first try: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h.
RETRY_SCHEDULE_S = (5.0, 300.0, 1800.0, 7200.0, 18000.0, 36000.0)
_RETRY_AFTER_STATUSES = (429, 502, 504)


class WebhookConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(description="http(s) endpoint that receives the events.")
    secret: SecretStr = Field(description="Standard Webhooks secret (whsec_…, base64).")
    events: list[str] = Field(default_factory=lambda: ["*"],
                              description="Event types to send; '*' for all.")


class Subscription:
    def __init__(self, config: WebhookConfig) -> None:
        self.url = config.url
        self.events = set(config.events)
        self.signer = Webhook(config.secret.get_secret_value())
        self.enabled = True

    def wants(self, event_type: str) -> bool:
        return self.enabled and ("*" in self.events or event_type in self.events)


class Emitter:
    """What jobs call: queue an event for every subscription that wants it.

    Queueing never fails a request. After an outbox error (Redis down) events are
    dropped, and counted, for ``pause_s`` without trying, so an outage costs one
    timeout per pause rather than one per request; then the outbox is tried again.
    """

    def __init__(self, subscriptions: Sequence[Subscription], outbox: Outbox,
                 metrics: Metrics, *, source: str = "contextsynth",
                 now: Callable[[], datetime] = lambda: datetime.now(UTC),
                 pause_s: float = 2.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._subscriptions = subscriptions
        self._outbox = outbox
        self._metrics = metrics
        self._source = source
        self._now = now
        self._pause = pause_s
        self._clock = clock
        self._retry_at: float | None = None  # set while the outbox is failing

    async def emit(self, event_type: str, tenant: str, data: Mapping[str, Any]) -> str:
        """The event's id, or "" when no subscription wants it."""
        wanted = [i for i, sub in enumerate(self._subscriptions) if sub.wants(event_type)]
        if not wanted:  # the common case without webhooks: nothing to write, no id to make
            return ""
        event_id = f"msg_{uuid.uuid4().hex}"
        envelope: dict[str, Any] = {
            "specversion": "1.0", "id": event_id, "source": self._source, "type": event_type,
            "time": self._now().isoformat(), "tenant": tenant,
            "datacontenttype": "application/json", "data": data,
        }
        rid = request_id.get()
        if rid is not None:  # the request that caused it (a CloudEvents extension)
            envelope["requestid"] = rid
        body = json.dumps(envelope, ensure_ascii=False, separators=(",", ":"))
        for index in wanted:
            if not await self._put(Entry(body, event_id, event_type, index)):
                self._metrics.webhook_dropped.labels(event_type).inc()
        return event_id

    async def _put(self, entry: Entry) -> bool:
        if self._retry_at is not None and self._clock() < self._retry_at:
            return False
        try:
            queued = await self._outbox.put(entry)
        except Exception as exc:
            if self._retry_at is None:
                log.warning("could not queue events, dropping them for %.1f s at a time: %s",
                            self._pause, exc)
            self._retry_at = self._clock() + self._pause
            return False
        if self._retry_at is not None:
            log.warning("queueing events again")
            self._retry_at = None
        return queued


class Deliverer:
    """Takes entries from the outbox and posts them, signed; one runs per process."""

    def __init__(self, subscriptions: Sequence[Subscription], outbox: Outbox,
                 metrics: Metrics, *, schedule: Sequence[float] = RETRY_SCHEDULE_S,
                 timeout_s: float = 10.0,
                 now: Callable[[], datetime] = lambda: datetime.now(UTC),
                 jitter: Callable[[], float] = random.random,
                 resolve: Resolve | None = None) -> None:
        self._subscriptions = subscriptions
        # Set unless private addresses are allowed: each delivery first checks where the
        # endpoint's name resolves now.
        self._resolve = resolve
        self._outbox = outbox
        self._metrics = metrics
        self._schedule = tuple(schedule)
        self._timeout = timeout_s
        self._now = now
        self._jitter = jitter

    async def run(self, http: httpx.AsyncClient, stop: asyncio.Event,
                  wait_s: float = 0.5) -> None:
        while not stop.is_set():
            try:
                await self.round(http, wait_s)
            except Exception as exc:
                log.warning("event delivery paused: %s", exc)
                await asyncio.sleep(wait_s)

    async def round(self, http: httpx.AsyncClient, wait_s: float) -> int:
        entries = await self._outbox.take(wait_s)
        for entry in entries:
            await self.deliver(http, entry)
        self._metrics.webhook_queue_depth.set(await self._outbox.depth())
        return len(entries)

    async def deliver(self, http: httpx.AsyncClient, entry: Entry) -> None:
        sub = self._subscriptions[entry.subscription]
        if not sub.enabled:
            await self._finish(entry, "dead_lettered", dead="the endpoint answered 410 Gone")
            return
        if self._resolve is not None:
            try:
                await check_resolved(sub.url, self._resolve)
            except PrivateAddress as exc:
                await self._failed(entry, f"refused: {exc}", None)
                return
        stamp = self._now()
        headers = {"content-type": "application/json", "webhook-id": entry.event_id,
                   "webhook-timestamp": str(int(stamp.timestamp())),
                   "webhook-signature": sub.signer.sign(entry.event_id, stamp, entry.body)}
        try:
            response = await http.post(sub.url, content=entry.body.encode(), headers=headers,
                                       timeout=self._timeout, follow_redirects=False)
        except httpx.HTTPError as exc:
            await self._failed(entry, f"unreachable ({type(exc).__name__})", None)
            return
        if 200 <= response.status_code < 300:
            await self._finish(entry, "delivered")
        elif response.status_code == 410:
            sub.enabled = False
            log.warning("webhook %s answered 410: disabled", sub.url)
            await self._finish(entry, "dead_lettered", dead="the endpoint answered 410 Gone")
        else:
            wait = None
            if response.status_code in _RETRY_AFTER_STATUSES:
                wait = _retry_after(response.headers.get("retry-after"))
            await self._failed(entry, f"HTTP {response.status_code}", wait)

    async def _failed(self, entry: Entry, reason: str, retry_after: float | None) -> None:
        if entry.attempt > len(self._schedule):
            await self._finish(entry, "dead_lettered",
                               dead=f"gave up after {entry.attempt} attempts: {reason}")
            return
        base = self._schedule[entry.attempt - 1]
        delay = retry_after if retry_after is not None else base * (0.9 + 0.2 * self._jitter())
        await self._outbox.retry(entry, delay)
        self._metrics.webhook_deliveries.labels(entry.event_type, "retried").inc()

    async def _finish(self, entry: Entry, outcome: str, *, dead: str | None = None) -> None:
        if dead is not None:
            await self._outbox.dead(entry, dead)
        else:
            await self._outbox.done(entry)
        self._metrics.webhook_deliveries.labels(entry.event_type, outcome).inc()


def _retry_after(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        return None
