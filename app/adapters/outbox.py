"""Where events wait for delivery: in memory (bounded), or in a Redis Stream.

An entry is one event for one subscription. Retries wait in a schedule until
they are due; entries that use up their attempts go to a dead-letter list.
With Redis, a consumer group shares the stream between replicas: an entry
read by a replica that died is claimed by another after ``claim_idle_s``.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import json
import logging
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol

from opentelemetry.trace import Tracer
from redis.commands.core import AsyncScript
from redis.exceptions import ResponseError

from app.adapters.redis_client import redis_client
from app.adapters.tracing import NO_TRACER

# The stream, its schedule of retries and its dead letters share a hash tag: on a
# cluster they live on one node, so moving an entry between them never crosses nodes.
STREAM = "cs:v2:{events}:outbox"
SCHEDULE = "cs:v2:{events}:retry"
DEAD = "cs:v2:{events}:dead"
GROUP = "deliverers"
# A due retry leaves the schedule and enters the stream in one step: a process killed
# between two separate commands would have taken it out and put it nowhere. Whoever
# removes it, moves it, so two replicas never move one twice.
_MOVE_DUE = """
if redis.call('zrem', KEYS[1], ARGV[1]) == 1 then
  redis.call('xadd', KEYS[2], '*', unpack(ARGV, 2))
  return 1
end
return 0
"""
log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Entry:
    body: str  # the signed JSON, byte for byte what receivers get
    event_id: str
    event_type: str
    subscription: int
    attempt: int = 1
    ref: str = ""  # the outbox's own id for it
    # The W3C traceparent of the request that made it ("" outside a trace): each
    # delivery's span links to it.
    trace: str = ""

    def to_fields(self) -> dict[str, str]:
        fields = {"body": self.body, "id": self.event_id, "type": self.event_type,
                  "sub": str(self.subscription), "attempt": str(self.attempt)}
        if self.trace:
            fields["trace"] = self.trace
        return fields

    @staticmethod
    def from_fields(fields: dict[Any, Any], ref: str) -> Entry:
        f = {k.decode() if isinstance(k, bytes) else k: v.decode() if isinstance(v, bytes)
             else v for k, v in fields.items()}
        return Entry(f["body"], f["id"], f["type"], int(f["sub"]), int(f["attempt"]), ref,
                     f.get("trace", ""))


class Outbox(Protocol):
    async def put(self, entry: Entry) -> bool:
        """False when the entry could not be queued (full or unreachable)."""
        ...

    async def take(self, wait_s: float) -> list[Entry]: ...

    async def done(self, entry: Entry) -> None: ...

    async def retry(self, entry: Entry, delay_s: float) -> None: ...

    async def dead(self, entry: Entry, reason: str) -> None: ...

    async def depth(self) -> int: ...

    @property
    def losses(self) -> int:
        """How many times the outbox was found to have lost what it held."""
        ...


class MemoryOutbox:
    """Bounded, one process; what a pod holds when it dies is lost (counted as drops)."""

    def __init__(self, max_entries: int = 10_000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._ready: deque[Entry] = deque()
        self._later: list[tuple[float, int, Entry]] = []
        self._max = max_entries
        self._clock = clock
        self._serial = 0
        self._signal = asyncio.Event()
        self.dead_letters: list[tuple[Entry, str]] = []

    @property
    def losses(self) -> int:
        return 0  # it dies with the process, and loses nothing before

    async def put(self, entry: Entry) -> bool:
        if len(self._ready) + len(self._later) >= self._max:
            return False
        self._ready.append(entry)
        self._signal.set()
        return True

    async def take(self, wait_s: float) -> list[Entry]:
        now = self._clock()
        while self._later and self._later[0][0] <= now:
            self._ready.append(heapq.heappop(self._later)[2])
        if not self._ready:
            self._signal.clear()
            due = self._later[0][0] - now if self._later else wait_s
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._signal.wait(), timeout=min(wait_s, max(due, 0)))
            return []
        taken = list(self._ready)
        self._ready.clear()
        return taken

    async def done(self, entry: Entry) -> None:
        return None

    async def retry(self, entry: Entry, delay_s: float) -> None:
        self._serial += 1
        later = replace(entry, attempt=entry.attempt + 1)
        heapq.heappush(self._later, (self._clock() + delay_s, self._serial, later))

    async def dead(self, entry: Entry, reason: str) -> None:
        self.dead_letters.append((entry, reason))

    async def depth(self) -> int:
        return len(self._ready) + len(self._later)


class RedisOutbox:
    """A Redis Stream read by a consumer group: events survive restarts, any replica delivers."""

    def __init__(self, url: str, *, claim_idle_s: float = 60.0, timeout_s: float = 2.0,
                 cluster: bool = False, clock: Callable[[], float] = time.time,
                 tracer: Tracer = NO_TRACER) -> None:
        # A read blocks up to its wait (under a second): the socket allows for it.
        self._redis = redis_client(url, cluster=cluster, timeout_s=timeout_s,
                                   read_timeout_s=timeout_s + 1, tracer=tracer)
        # redis' stubs type register_script for the single-node client only.
        self._move: AsyncScript = self._redis.register_script(_MOVE_DUE)  # type: ignore[misc]
        self._consumer = f"c-{uuid.uuid4().hex[:12]}"
        self._claim_idle_ms = int(claim_idle_s * 1000)
        self._clock = clock
        self._group_ready = False
        self._losses = 0

    @property
    def losses(self) -> int:
        return self._losses

    async def _group(self) -> None:
        if self._group_ready:
            return
        try:
            await self._redis.xgroup_create(STREAM, GROUP, id="0", mkstream=True)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise
        self._group_ready = True

    async def put(self, entry: Entry) -> bool:
        fields: dict[Any, Any] = entry.to_fields()
        await self._redis.xadd(STREAM, fields)
        return True

    async def take(self, wait_s: float) -> list[Entry]:
        try:
            return await self._take(wait_s)
        except ResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise
            # Redis came back without the group (restarted empty, or flushed): make it
            # again, or nothing queued from now on would ever be read.
            log.warning("the outbox's consumer group was gone; making it again")
            self._group_ready = False
            self._losses += 1
            return await self._take(wait_s)

    async def _take(self, wait_s: float) -> list[Entry]:
        await self._group()
        await self._move_due_retries()
        # Entries a dead replica read but never finished.
        claimed = await self._redis.xautoclaim(STREAM, GROUP, self._consumer,
                                               self._claim_idle_ms, "0-0", count=20)
        entries = [Entry.from_fields(f, _text(ref)) for ref, f in claimed[1] if f]
        if entries:
            return entries
        read = await self._redis.xreadgroup(GROUP, self._consumer, {STREAM: ">"}, count=100,
                                            block=max(int(wait_s * 1000), 1))
        return [Entry.from_fields(f, _text(ref)) for _, items in read or []
                for ref, f in items]

    async def _move_due_retries(self) -> None:
        due = await self._redis.zrangebyscore(SCHEDULE, 0, self._clock(), start=0, num=20)
        for raw in due:
            fields = [part for pair in json.loads(raw).items() for part in pair]
            await self._move(keys=[SCHEDULE, STREAM], args=[raw, *fields])

    async def done(self, entry: Entry) -> None:
        await self._redis.xack(STREAM, GROUP, entry.ref)
        await self._redis.xdel(STREAM, entry.ref)

    async def retry(self, entry: Entry, delay_s: float) -> None:
        later = Entry(entry.body, entry.event_id, entry.event_type, entry.subscription,
                      entry.attempt + 1, trace=entry.trace)
        await self._redis.zadd(SCHEDULE, {json.dumps(later.to_fields()): self._clock()
                                          + delay_s})
        await self.done(entry)

    async def dead(self, entry: Entry, reason: str) -> None:
        fields: dict[Any, Any] = {**entry.to_fields(), "reason": reason[:500]}
        await self._redis.xadd(DEAD, fields)
        await self.done(entry)

    async def depth(self) -> int:
        await self._group()
        pending = await self._redis.xlen(STREAM)
        scheduled = await self._redis.zcard(SCHEDULE)
        return int(pending) + int(scheduled)

    async def aclose(self) -> None:
        await self._redis.aclose()


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
