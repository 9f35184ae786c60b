"""Rate limits as token buckets: a small Protocol, the in-process limiter, and the
fail-open rule. The Redis limiter, shared by every replica, is in ``redis_ratelimit``.

A bucket holds up to ``capacity`` units and refills continuously, ``capacity`` per
``period_s``: a limit of 600 requests per minute admits a burst of 600, then one every
tenth of a second. A take draws from several buckets at once (a request and its
tokens) and is all or nothing: when one bucket lacks what is asked, nothing is drawn
from any, so a refused request costs its tenant nothing.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from app.adapters.metrics import Metrics

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Bucket:
    name: str  # what it limits, as the tenant is told: "requests_per_minute"
    capacity: int
    period_s: float

    @property
    def rate(self) -> float:
        """Units refilled per second."""
        return self.capacity / self.period_s


@dataclass(frozen=True, slots=True)
class Draw:
    bucket: Bucket
    cost: int


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a take found. ``refused``: the bucket that lacked the most time, or None when
    the take was granted; ``retry_after_s``: when every bucket will hold its cost;
    ``remaining``: each bucket's units after the take (granted) or now (refused), in the
    order of the draws."""

    refused: Bucket | None
    retry_after_s: float
    remaining: tuple[int, ...]

    @property
    def granted(self) -> bool:
        return self.refused is None


def unchecked(draws: Sequence[Draw]) -> Verdict:
    """A verdict for a take no store could check: granted, as if every bucket were full."""
    return Verdict(None, 0.0, tuple(d.bucket.capacity for d in draws))


class Limiter(Protocol):
    async def take(self, tenant: str, draws: Sequence[Draw]) -> Verdict:
        """Draw every cost from the tenant's buckets, or none of them."""
        ...

    async def aclose(self) -> None: ...


@dataclass(slots=True)
class BucketLevel:
    """A bucket's units at a moment."""

    units: float
    at: float


def refilled(level: BucketLevel | None, bucket: Bucket, now: float) -> float:
    """The units a bucket holds at ``now``: full when it has no level yet (or its level
    expired), never more than its capacity (which may have been lowered since), and no
    refill for a clock that went back."""
    if level is None:
        return float(bucket.capacity)
    return min(float(bucket.capacity),
               level.units + max(0.0, now - level.at) * bucket.rate)


def decide(units: Sequence[float], draws: Sequence[Draw]) -> tuple[int, float]:
    """Which draw is refused (its index, -1 for none) and the wait until all fit. The
    Lua script in ``redis_ratelimit`` does the same, step for step."""
    refused, wait = -1, 0.0
    for i, (held, draw) in enumerate(zip(units, draws, strict=True)):
        if draw.cost > held:
            lacking = (draw.cost - held) / draw.bucket.rate
            if lacking > wait:
                refused, wait = i, lacking
    return refused, wait


class MemoryLimiter:
    """The buckets in this process: the limiter without Redis. Its levels are keyed by
    tenant and bucket, tenants being the configured ones: the table stays as small as
    the configuration. Every take runs on the event loop, with no await inside it, so
    two takes never interleave."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._levels: dict[tuple[str, str], BucketLevel] = {}

    async def take(self, tenant: str, draws: Sequence[Draw]) -> Verdict:
        now = self._clock()
        keys = [(tenant, d.bucket.name) for d in draws]
        units = [refilled(self._levels.get(k), d.bucket, now) for k, d in zip(keys, draws,
                                                                             strict=True)]
        refused, wait = decide(units, draws)
        if refused >= 0:
            return Verdict(draws[refused].bucket, wait, tuple(math.floor(u) for u in units))
        for key, held, draw in zip(keys, units, draws, strict=True):
            level = self._levels.get(key)
            at = now if level is None else max(level.at, now)
            self._levels[key] = BucketLevel(held - draw.cost, at)
        return Verdict(None, 0.0, tuple(math.floor(u - d.cost)
                                        for u, d in zip(units, draws, strict=True)))

    async def aclose(self) -> None:
        return None


class FailOpenLimiter:
    """A store that fails never refuses a request: it is served unchecked, counted in
    ``contextsynth_rate_limit_unchecked_total``, and the outage logged once. After an
    error the store is left alone for ``pause_s`` (requests go unchecked without waiting
    on it), then tried again by the next request.

    Failing open is the choice of a limiter that protects fairness and budgets, not
    the service's life: refusing every tenant because Redis is down would turn a cache
    outage into a full one."""

    def __init__(self, inner: Limiter, metrics: Metrics, *, pause_s: float = 2.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._inner = inner
        self._metrics = metrics
        self._pause = pause_s
        self._clock = clock
        self._retry_at = 0.0
        self._down = False

    @property
    def healthy(self) -> bool:
        return not self._down

    async def take(self, tenant: str, draws: Sequence[Draw]) -> Verdict:
        if self._down and self._clock() < self._retry_at:
            self._metrics.rate_limit_unchecked.inc()
            return unchecked(draws)
        try:
            verdict = await self._inner.take(tenant, draws)
        except Exception as exc:
            self._metrics.rate_limit_unchecked.inc()
            if not self._down:
                log.warning("rate limits unavailable, serving requests unchecked: %s",
                            f"{type(exc).__name__}: {exc}"[:200])
            self._down = True
            self._retry_at = self._clock() + self._pause
            return unchecked(draws)
        if self._down:
            log.warning("rate limits are checked again")
            self._down = False
        return verdict

    async def aclose(self) -> None:
        await self._inner.aclose()
