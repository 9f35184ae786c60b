"""Webhook events: the envelope, subscriptions, signing, emitting and delivering.

The body is a CloudEvents 1.0 structured JSON document (``tenant`` as an
extension attribute) signed whole with Standard Webhooks. Jobs only enqueue
(``adapters.pump`` moves events on); a delivery posts, retries on the Standard Webhooks schedule
(honouring Retry-After on 429/502/504, never following redirects, disabling
an endpoint that answers 410) and dead-letters what never gets through.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import aiohttp
from opentelemetry.trace import Span, SpanKind, StatusCode, Tracer, get_current_span
from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator
from standardwebhooks import Webhook

from app.adapters.addresses import RefusedHost, refused_literal
from app.adapters.metrics import Metrics
from app.adapters.outbox import Entry, Outbox
from app.adapters.tracing import (
    NO_TRACER,
    current_traceparent,
    links,
    server_attributes,
    span,
    traced,
    with_trace_context,
)
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

    @field_validator("events")
    @classmethod
    def _known(cls, events: list[str]) -> list[str]:
        # A misspelt type would subscribe to nothing, silently: refuse it at start-up.
        unknown = [e for e in events if e != "*" and e not in EVENT_TYPES]
        if unknown:
            raise ValueError(f"unknown event type(s) {', '.join(map(repr, unknown))}; the "
                             f"types are {', '.join(EVENT_TYPES)}, or '*' for all")
        return events


class Subscription:
    def __init__(self, config: WebhookConfig) -> None:
        self.url = config.url
        self.events = set(config.events)
        self.signer = Webhook(config.secret.get_secret_value())
        self.enabled = True

    def wants(self, event_type: str) -> bool:
        return self.enabled and ("*" in self.events or event_type in self.events)


class Backlog:
    """Events accepted from requests and not yet in the outbox."""

    def __init__(self, max_entries: int, metrics: Metrics) -> None:
        self._entries: deque[Entry] = deque()
        self._max = max_entries
        self._metrics = metrics
        self.ready = asyncio.Event()

    def __len__(self) -> int:
        return len(self._entries)

    def add(self, entry: Entry) -> None:
        if len(self._entries) >= self._max:
            self._metrics.webhook_dropped.labels(entry.event_type).inc()
            return
        self._entries.append(entry)
        self.ready.set()

    def take(self) -> Entry | None:
        return self._entries.popleft() if self._entries else None

    def put_back(self, entry: Entry) -> None:
        self._entries.appendleft(entry)

    def requeue(self, entries: Sequence[Entry]) -> None:
        """Ahead of newer events: written again after the outbox lost them."""
        self._entries.extendleft(reversed(entries))
        self.ready.set()


class Emitter:
    """What jobs call: an event for every subscription that wants it, handed to
    ``accept`` (the pump's: into the outbox while it answers, else into the backlog)."""

    def __init__(self, subscriptions: Sequence[Subscription],
                 accept: Callable[[Entry], Awaitable[None]], *,
                 source: str = "contextsynth",
                 now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self._subscriptions = subscriptions
        self._accept = accept
        self._source = source
        self._now = now

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
        trace = current_traceparent()
        for index in wanted:
            await self._accept(Entry(body, event_id, event_type, index, trace=trace))
        return event_id


class Deliverer:
    """Takes entries from the outbox and posts them, signed; one runs per process."""

    def __init__(self, subscriptions: Sequence[Subscription], outbox: Outbox,
                 metrics: Metrics, *, schedule: Sequence[float] = RETRY_SCHEDULE_S,
                 timeout_s: float = 10.0,
                 now: Callable[[], datetime] = lambda: datetime.now(UTC),
                 jitter: Callable[[], float] = random.random,
                 public_only: bool = False, tracer: Tracer = NO_TRACER) -> None:
        self._subscriptions = subscriptions
        self._tracer = tracer
        # Set unless private addresses are allowed. A name is checked by the session's
        # resolver as it connects (addresses.delivery_connector); an address written as a
        # number is connected to without a lookup, so it is checked here.
        self._public_only = public_only
        self._outbox = outbox
        self._metrics = metrics
        self._schedule = tuple(schedule)
        # aiohttp's C parser: a delivery costs a fraction of the interpreter time httpx's
        # pure-Python one did, and deliveries share it with the requests of a busy replica.
        self._timeout = aiohttp.ClientTimeout(total=timeout_s)
        self._now = now
        self._jitter = jitter

    async def deliver(self, http: aiohttp.ClientSession, entry: Entry) -> bool:
        """One attempt; True when the entry is finished (delivered or dead-lettered),
        False when it waits for a retry. Its span begins a trace of its own, linked to
        the request that made the event: a retry may come hours after that one ended."""
        sub = self._subscriptions[entry.subscription]
        with span(self._tracer, f"webhook {entry.event_type}", kind=SpanKind.CLIENT,
                  root=True, links=links(entry.trace), attributes={
                    "contextsynth.event.type": entry.event_type,
                    "contextsynth.event.id": entry.event_id,
                    "contextsynth.webhook.attempt": entry.attempt,
                    "contextsynth.webhook.subscription": entry.subscription,
                    **server_attributes(sub.url)}) as current:
            return await self._attempt(http, entry, current)

    async def _attempt(self, http: aiohttp.ClientSession, entry: Entry, current: Span,
                       ) -> bool:
        sub = self._subscriptions[entry.subscription]
        if not sub.enabled:
            await self._finish(entry, "dead_lettered", dead="the endpoint answered 410 Gone")
            return True
        if self._public_only and (why := refused_literal(sub.url)) is not None:
            return await self._failed(entry, f"refused: {why}", None)
        stamp = self._now()
        headers = {"content-type": "application/json", "webhook-id": entry.event_id,
                   "webhook-timestamp": str(int(stamp.timestamp())),
                   "webhook-signature": sub.signer.sign(entry.event_id, stamp, entry.body)}
        if traced(current):  # the receiver may join the delivery's trace
            headers.update(with_trace_context([]))
        try:
            async with http.post(sub.url, data=entry.body.encode(), headers=headers,
                                 timeout=self._timeout, allow_redirects=False) as response:
                status = response.status
                retry_after = response.headers.get("retry-after")
        except (aiohttp.ClientError, TimeoutError) as exc:
            current.set_attribute("error.type", type(exc).__name__)
            current.set_status(StatusCode.ERROR)
            if isinstance(exc.__cause__, RefusedHost):
                return await self._failed(entry, f"refused: {exc.__cause__}", None)
            return await self._failed(entry, f"unreachable ({type(exc).__name__})", None)
        current.set_attribute("http.response.status_code", status)
        if status >= 300:
            current.set_attribute("error.type", str(status))
            current.set_status(StatusCode.ERROR)
        if 200 <= status < 300:
            await self._finish(entry, "delivered")
            return True
        if status == 410:
            sub.enabled = False
            log.warning("webhook %s answered 410: disabled", sub.url)
            await self._finish(entry, "dead_lettered", dead="the endpoint answered 410 Gone")
            return True
        wait = _retry_after(retry_after) if status in _RETRY_AFTER_STATUSES else None
        return await self._failed(entry, f"HTTP {status}", wait)

    async def _failed(self, entry: Entry, reason: str, retry_after: float | None) -> bool:
        if entry.attempt > len(self._schedule):
            await self._finish(entry, "dead_lettered",
                               dead=f"gave up after {entry.attempt} attempts: {reason}")
            return True
        base = self._schedule[entry.attempt - 1]
        delay = retry_after if retry_after is not None else base * (0.9 + 0.2 * self._jitter())
        await self._outbox.retry(entry, delay)
        self._metrics.webhook_deliveries.labels(entry.event_type, "retried").inc()
        get_current_span().set_attribute("contextsynth.webhook.outcome", "retried")
        return False

    async def _finish(self, entry: Entry, outcome: str, *, dead: str | None = None) -> None:
        if dead is not None:
            await self._outbox.dead(entry, dead)
        else:
            await self._outbox.done(entry)
        self._metrics.webhook_deliveries.labels(entry.event_type, outcome).inc()
        get_current_span().set_attribute("contextsynth.webhook.outcome", outcome)


def _retry_after(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        return None
