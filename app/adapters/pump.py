"""Moving events from the requests that make them to the endpoints that get them.

A request writes its events to the outbox while the outbox answers (so an event of
an answered request survives the process being killed), and to the ``Backlog`` in
memory once the outbox has failed: after that first failure no request waits on
Redis. Behind it, three kinds of background work:

- the flusher writes the backlog to the outbox; while the outbox cannot be reached
  the events wait in memory (bounded, drops counted) and go in when it is back;
- the dispatcher takes entries from the outbox and hands each to its subscription's
  ``Lane``; a lane delivers several at once (bounded), and a slow or dead endpoint
  fills only its own lane, so it never delays another;
- with Redis, the ``Journal`` keeps what this process wrote until this process
  finishes it. When Redis comes back without its data (the outbox finds its consumer
  group gone), the journal is written again, and what it no longer held is counted
  lost and logged; after any outage (a failover among them) what was written in the
  seconds before it is written again. Duplicates are possible (the same
  ``webhook-id``), losses are not silent.

On shutdown the flusher writes what is left, lanes deliver what they hold within the
drain time, and what could be neither delivered nor left in Redis is counted lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import replace

import aiohttp

from app.adapters.events import Backlog, Deliverer
from app.adapters.metrics import Metrics
from app.adapters.outbox import Entry, Outbox

log = logging.getLogger(__name__)
# A lane holds at most this many entries per concurrent delivery; past it an entry
# waits in the outbox, where it costs no memory here.
_LANE_DEPTH = 64
# How long an entry a full lane could not take waits in the outbox before it is
# offered again.
_DEFER_S = 1.0
# A replica follows its master within milliseconds; a failover loses what the master
# took in its last moments. After an outage, what this process wrote this long before
# it is written again (a receiver may get it twice, never not at all).
_UNREPLICATED_S = 5.0


def _key(entry: Entry) -> tuple[str, int]:
    return entry.event_id, entry.subscription


class Journal:
    """What this process wrote to a shared outbox and has not finished, oldest first,
    bounded by count: past it the oldest are forgotten (and counted), since this
    process could no longer write them again."""

    def __init__(self, max_entries: int, clock: Callable[[], float] = time.monotonic) -> None:
        self._entries: OrderedDict[tuple[str, int], tuple[Entry, float]] = OrderedDict()
        self._max = max_entries
        self._clock = clock
        self.forgotten = 0

    def __len__(self) -> int:
        return len(self._entries)

    def wrote(self, entry: Entry) -> None:
        self._entries[_key(entry)] = (replace(entry, ref=""), self._clock())
        self._entries.move_to_end(_key(entry))
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)
            self.forgotten += 1

    def finished(self, entry: Entry) -> None:
        self._entries.pop(_key(entry), None)

    def drain(self) -> tuple[list[Entry], int]:
        """Every entry held, and how many were forgotten since the last drain."""
        entries, forgotten = [e for e, _ in self._entries.values()], self.forgotten
        self._entries.clear()
        self.forgotten = 0
        return entries, forgotten

    def between(self, start: float, end: float) -> list[Entry]:
        """The entries written from ``start`` to ``end``, taken out (written again, they
        come back)."""
        recent = [key for key, (_, at) in self._entries.items() if start <= at <= end]
        return [self._entries.pop(key)[0] for key in recent]


class Lane:
    """One subscription's deliveries: up to ``width`` at once, a bounded queue."""

    def __init__(self, width: int, deliver: Callable[[Entry], Awaitable[None]]) -> None:
        self._queue: asyncio.Queue[Entry] = asyncio.Queue(maxsize=width * _LANE_DEPTH)
        self._deliver = deliver
        self._width = width
        self._workers: list[asyncio.Task[None]] = []
        self.busy = 0

    def start(self) -> None:
        self._workers = [asyncio.create_task(self._work()) for _ in range(self._width)]

    def offer(self, entry: Entry) -> bool:
        try:
            self._queue.put_nowait(entry)
        except asyncio.QueueFull:
            return False
        return True

    @property
    def holding(self) -> int:
        return self._queue.qsize() + self.busy

    async def _work(self) -> None:
        while True:
            entry = await self._queue.get()
            self.busy += 1
            try:
                await self._deliver(entry)
            except Exception as exc:  # a delivery never stops its lane
                log.warning("webhook delivery failed unexpectedly: %s", exc)
            finally:
                self.busy -= 1

    async def stop(self) -> int:
        """Stop at once; how many entries it held (queued, or in a delivery cut short)."""
        held = self.holding
        for worker in self._workers:
            worker.cancel()
        for worker in self._workers:
            with contextlib.suppress(asyncio.CancelledError):
                await worker
        return held


class Pump:
    def __init__(self, backlog: Backlog, outbox: Outbox, deliverer: Deliverer,
                 metrics: Metrics, *, subscriptions: int, width: int, pause_s: float,
                 shared: bool, journal_entries: int, put_timeout_s: float = 1.0) -> None:
        self.backlog = backlog
        self._outbox = outbox
        self._deliverer = deliverer
        self._metrics = metrics
        self._pause = pause_s
        # A shared outbox (Redis) outlives this process; a memory one dies with it.
        self._shared = shared
        self.journal = Journal(journal_entries)
        self._lanes = [Lane(width, self._deliver) for _ in range(subscriptions)]
        self._holding: set[str] = set()  # refs in a lane: a re-claimed one is not taken twice
        self._losses = outbox.losses
        self._depth = 0
        self._tasks: list[asyncio.Task[None]] = []
        self._http: aiohttp.ClientSession | None = None
        self._stopping = asyncio.Event()
        self._failing = False  # the outbox failed: requests add to the backlog
        self._failed_at: float | None = None  # when the outbox last began to fail
        self._put_timeout = put_timeout_s  # what a request waits at most, once

    def start(self, http: aiohttp.ClientSession) -> None:
        self._http = http
        for lane in self._lanes:
            lane.start()
        self._tasks = [asyncio.create_task(self._flush_loop()),
                       asyncio.create_task(self._dispatch_loop())]

    async def aclose_http(self) -> None:
        if self._http is not None:
            await self._http.close()

    async def _deliver(self, entry: Entry) -> None:
        assert self._http is not None
        try:
            finished = await self._deliverer.deliver(self._http, entry)
        finally:
            self._holding.discard(entry.ref)
        if finished:
            self.journal.finished(entry)

    # -- events into the outbox ------------------------------------------------------------

    async def accept(self, entry: Entry) -> None:
        """A request's event: into the outbox before the request answers, unless the
        outbox is failing; then into the backlog. Events written again after an outage
        may be waiting in the backlog while the outbox answers: a new event does not
        queue behind them, or the answer would go out with its event only in memory."""
        if self._failing:
            self.backlog.add(entry)
            return
        try:
            async with asyncio.timeout(self._put_timeout):
                queued = await self._outbox.put(entry)
        except Exception as exc:
            # Every request that was waiting on the outbox fails with it: one line says
            # so for the outage, not one per request.
            if not self._failing:
                log.warning("could not write events to the outbox, holding them in memory "
                            "until it is back: %s", exc)
            self._failing = True
            self._outage()
            self.backlog.add(entry)
            return
        if not queued:
            self._metrics.webhook_dropped.labels(entry.event_type).inc()
        elif self._shared:
            self.journal.wrote(entry)

    async def _flush_loop(self) -> None:
        while True:
            await self.backlog.ready.wait()
            if not await self.flush():
                await asyncio.sleep(self._pause)

    async def flush(self) -> bool:
        """Write the backlog to the outbox; False when the outbox failed (the rest waits)."""
        while (entry := self.backlog.take()) is not None:
            try:
                if not await self._outbox.put(entry):
                    self._metrics.webhook_dropped.labels(entry.event_type).inc()
                    continue
            except Exception:
                self.backlog.put_back(entry)
                self._failing = True
                self._outage()
                return False
            if self._shared:
                self.journal.wrote(entry)
        self.backlog.ready.clear()
        if self._failing:
            self._failing = False
            log.warning("writing events to the outbox again")
        self._after_outage()
        return True

    def _outage(self) -> None:
        if self._failed_at is None:
            self._failed_at = time.monotonic()

    def _after_outage(self) -> None:
        """The outbox answers again: what was written just before it failed may not
        have reached the node that answers now (a promoted replica); write it again."""
        if self._failed_at is None or not self._shared:
            self._failed_at = None
            return
        # Not what went in since: the node that answers now took that.
        again = self.journal.between(self._failed_at - _UNREPLICATED_S, self._failed_at)
        self._failed_at = None
        if again:
            self.backlog.requeue(again)
            log.warning("the outbox is back: writing again the %d events written just before "
                        "it failed", len(again))

    # -- the outbox into the lanes --------------------------------------------------------

    async def _dispatch_loop(self) -> None:
        while not self._stopping.is_set():
            try:
                await self.dispatch(0.5)
            except Exception as exc:
                self._outage()
                log.warning("event delivery paused: %s", exc)
                await asyncio.sleep(self._pause)

    async def dispatch(self, wait_s: float) -> int:
        """One round: take what is due and hand it to the lanes; the entries taken."""
        entries = await self._outbox.take(wait_s)
        self._after_loss()
        self._after_outage()
        for entry in entries:
            if entry.ref and entry.ref in self._holding:
                continue  # claimed again while it waited in our own lane
            if self._lanes[entry.subscription].offer(entry):
                self._holding.add(entry.ref)
            else:  # its endpoint is behind: the entry waits in the outbox, not here
                await self._outbox.retry(replace(entry, attempt=entry.attempt - 1), _DEFER_S)
        self._depth = await self._outbox.depth()
        self._metrics.webhook_queue_depth.set(self._depth)
        return len(entries)

    def _after_loss(self) -> None:
        """When the outbox lost what it held: write again what this process wrote and
        has not finished. Each replica writes its own again; what this one wrote but no
        longer holds (its journal overflowed) is counted lost."""
        if self._outbox.losses == self._losses:
            return
        self._losses = self._outbox.losses
        again, forgotten = self.journal.drain()
        self.backlog.requeue(again)
        if forgotten:
            self._metrics.webhook_lost.labels("outbox_lost").inc(forgotten)
        log.warning("the outbox lost its events (Redis restarted empty?): writing again the "
                    "%d this process had not finished (%d waited there when last counted; "
                    "%d it no longer held are lost)", len(again), self._depth, forgotten)

    # -- shutdown -----------------------------------------------------------------------

    async def stop(self, drain_s: float) -> None:
        """Deliver what is held within ``drain_s``; what is left stays in a shared outbox,
        or is counted lost."""
        deadline = time.monotonic() + drain_s
        self._stopping.set()
        if self._shared:  # written now, it outlives this process
            with contextlib.suppress(Exception):
                await self.flush()
        while time.monotonic() < deadline:
            if not self._shared:
                with contextlib.suppress(Exception):
                    await self.flush()
                    await self.dispatch(0.01)
            if not len(self.backlog) and not any(lane.holding for lane in self._lanes) \
                    and (self._shared or not await self._outbox.depth()):
                break
            await asyncio.sleep(0.02)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        held = sum([await lane.stop() for lane in self._lanes])
        lost = len(self.backlog)
        if not self._shared:  # a shared outbox keeps what was held for other replicas
            lost += held + await self._outbox.depth()
        if lost:
            self._metrics.webhook_lost.labels("shutdown").inc(lost)
            log.warning("stopping with %d events undelivered: they are lost", lost)
