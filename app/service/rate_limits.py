"""Per-tenant rate limits: requests per minute, tokens per minute and tokens per day.

Limits are configured per tenant (``CONTEXTSYNTH_RATE_LIMITS``), with a default for
every other tenant (``CONTEXTSYNTH_RATE_LIMIT_DEFAULT``, none unless set): a tenant
without a limit costs nothing, not even a count of its tokens.

A request is admitted or refused before any work, in one take from the limiter (one
Redis round trip when shared): it draws one request and its tokens. Tokens are those
the tenant sends, counted before compaction by the service's own counter: every text
of the body, base64 media left out. They are what the tenant controls and what is known
before the job; what compaction saves is the service's to give, not a credit. A
request with more tokens than a bucket can ever hold is refused for good (413, not
retried by SDKs), the others wait their turn (429 with Retry-After).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from app.adapters import jsoncodec
from app.adapters.metrics import Metrics
from app.adapters.ratelimit import Bucket, Draw, Limiter, Verdict
from app.engine.errors import ContextsynthError
from app.engine.transcript.tokens import TokenCounter
from app.service.work import Worker


class TenantLimits(BaseModel):
    """One tenant's limits; a limit left out is no limit."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    requests_per_minute: int | None = Field(None, ge=1)
    tokens_per_minute: int | None = Field(None, ge=1)
    tokens_per_day: int | None = Field(None, ge=1)


@dataclass(frozen=True, slots=True)
class LimitKind:
    """A kind of limit: the field that sets it, its period, what it counts, and the
    suffix of its ``x-ratelimit-*`` headers (OpenAI's names where it has them)."""

    field: str
    period_s: float
    unit: str  # "requests" or "tokens"
    per: str  # "minute" or "day"
    header: str


KINDS = (LimitKind("requests_per_minute", 60.0, "requests", "minute", "requests"),
         LimitKind("tokens_per_minute", 60.0, "tokens", "minute", "tokens"),
         LimitKind("tokens_per_day", 86_400.0, "tokens", "day", "tokens-day"))
_KIND = {k.field: k for k in KINDS}


class OverLimit(ContextsynthError):
    """A tenant's limit refused the request. ``upstream``: the provider whose error
    shape a proxied caller gets (None: a problem document)."""

    def __init__(self, detail: str, *, limit: str, value: int, tokens: int | None,
                 upstream: str | None, headers: Mapping[str, str],
                 retry_after: float | None = None) -> None:
        super().__init__(detail)
        self.limit = limit
        self.value = value
        self.tokens = tokens
        self.upstream = upstream
        self.headers = dict(headers)
        self.retry_after = retry_after

    def fields(self) -> dict[str, Any]:
        """The problem document's own members: which limit, its value, and (when the
        same request may pass later) when to retry, in whole seconds."""
        found: dict[str, Any] = {"limit": self.limit, "limit_value": self.value}
        if self.tokens is not None:
            found["tokens"] = self.tokens
        if self.retry_after is not None:
            found["retry_after"] = whole_seconds(self.retry_after)
        return found


class RateLimited(OverLimit):
    slug = "rate-limited"
    title = "The tenant's rate limit is reached"


class TooManyTokens(OverLimit):
    """More tokens than the bucket holds even when full: waiting never helps."""

    slug = "too-many-tokens"
    title = "The request has more tokens than the tenant's limit allows"


def whole_seconds(seconds: float) -> int:
    """A wait as Retry-After says it: whole seconds, at least one."""
    return max(1, math.ceil(seconds))


@dataclass(frozen=True, slots=True)
class Admitted:
    """A granted take: what is left in each bucket, for the answer's headers."""

    draws: tuple[Draw, ...]
    verdict: Verdict

    def headers(self) -> dict[str, str]:
        return _headers(self.draws, self.verdict)


def _headers(draws: tuple[Draw, ...], verdict: Verdict) -> dict[str, str]:
    headers = {}
    for draw, left in zip(draws, verdict.remaining, strict=True):
        suffix = _KIND[draw.bucket.name].header
        headers[f"x-ratelimit-limit-{suffix}"] = str(draw.bucket.capacity)
        headers[f"x-ratelimit-remaining-{suffix}"] = str(left)
    return headers


def _buckets(limits: TenantLimits) -> tuple[Bucket, ...]:
    return tuple(Bucket(k.field, value, k.period_s) for k in KINDS
                 if (value := getattr(limits, k.field)) is not None)


# Strings that are base64 media, not text: Anthropic's and Gemini's ``data``, OpenAI's
# ``file_data`` and audio ``data``, and data URLs anywhere (image_url).
_MEDIA_KEYS = frozenset({"data", "file_data"})


def texts(body: Any) -> list[str]:
    """Every text of a JSON value (object keys are its fields, not its text), base64
    media left out; iterative, however deep the body nests."""
    found: list[str] = []
    stack = [body]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            if not value.startswith("data:"):
                found.append(value)
        elif isinstance(value, dict):
            stack.extend(v for k, v in value.items() if k not in _MEDIA_KEYS)
        elif isinstance(value, list):
            stack.extend(value)
    return found


class RateLimits:
    """The limits of every tenant, checked against a limiter (in-process, or Redis)."""

    def __init__(self, limiter: Limiter, metrics: Metrics, counter: TokenCounter, *,
                 tenants: Mapping[str, TenantLimits] | None = None,
                 default: TenantLimits | None = None,
                 offload_chars: int = 1_000_000) -> None:
        self.limiter = limiter
        self._metrics = metrics
        self._counter = counter
        self._tenants = {name: _buckets(limits) for name, limits in (tenants or {}).items()}
        self._default = _buckets(default or TenantLimits())
        self._offload_chars = offload_chars
        # Whether any tenant has a limit at all: without, a request costs one look here.
        self.enabled = bool(self._default) or any(self._tenants.values())

    def buckets(self, tenant: str) -> tuple[Bucket, ...]:
        return self._tenants.get(tenant, self._default)

    async def admit(self, tenant: str, route: str, body: Any = None, *,
                    upstream: str | None = None, request: bool = True) -> Admitted | None:
        """Draw one request and the body's tokens from the tenant's buckets, or raise
        ``RateLimited`` (429) or ``TooManyTokens`` (413). ``body``: the request's JSON,
        parsed or as bytes (read only when the tenant's tokens are limited); None for a
        request without one, which draws from the request buckets alone. ``route``: its
        template, for the metric. ``request``: False when the request was drawn already
        (by the call that made this one), so only the tokens are. None when no limit
        applies."""
        buckets = self.buckets(tenant)
        if body is None:  # nothing to count: its token buckets are left alone
            buckets = tuple(b for b in buckets if _KIND[b.name].unit == "requests")
        if not request:
            buckets = tuple(b for b in buckets if _KIND[b.name].unit != "requests")
        if not buckets:
            return None
        tokens = None
        if any(_KIND[b.name].unit == "tokens" for b in buckets):
            tokens = await self.count(body)
        draws = tuple(Draw(b, 1 if _KIND[b.name].unit == "requests" else tokens or 0)
                      for b in buckets)
        for draw in draws:
            if draw.cost > draw.bucket.capacity:
                self._metrics.rate_limited.labels(tenant, draw.bucket.name, route).inc()
                raise self._too_many(tenant, draw, upstream)
        verdict = await self.limiter.take(tenant, draws)
        if verdict.refused is None:
            return Admitted(draws, verdict)
        self._metrics.rate_limited.labels(tenant, verdict.refused.name, route).inc()
        raise self._refused(tenant, draws, verdict, tokens, upstream)

    async def count(self, body: Any) -> int:
        """The tokens of a body's texts; a large body counted off the event loop."""
        if isinstance(body, bytes):
            try:
                body = jsoncodec.loads(body)
            except (ValueError, RecursionError):
                return 0  # not JSON: the provider will say so, and nothing was read
        found = texts(body)
        work = Worker(offload=sum(map(len, found)) > self._offload_chars)
        return await work(self._sum, found)

    def _sum(self, found: list[str]) -> int:
        text = self._counter.text
        return sum(text(t) for t in found)

    def _too_many(self, tenant: str, draw: Draw, upstream: str | None) -> TooManyTokens:
        kind = _KIND[draw.bucket.name]
        return TooManyTokens(
            f"this request has {draw.cost} tokens, and tenant {tenant!r} may send at most "
            f"{draw.bucket.capacity} tokens per {kind.per} ({kind.field}): it can never be "
            "admitted. Send fewer tokens (compact the history first, or split the "
            "request), or ask for a higher limit.",
            limit=kind.field, value=draw.bucket.capacity, tokens=draw.cost,
            upstream=upstream, headers={})

    def _refused(self, tenant: str, draws: tuple[Draw, ...], verdict: Verdict,
                 tokens: int | None, upstream: str | None) -> RateLimited:
        bucket = verdict.refused
        assert bucket is not None
        kind = _KIND[bucket.name]
        wait = whole_seconds(verdict.retry_after_s)
        if kind.unit == "requests":
            what = f"tenant {tenant!r} has made its {bucket.capacity} requests per {kind.per}"
        else:
            left = verdict.remaining[[d.bucket for d in draws].index(bucket)]
            what = (f"this request has {tokens} tokens, and tenant {tenant!r} has {left} "
                    f"of its {bucket.capacity} tokens per {kind.per} left")
        return RateLimited(
            f"{what} ({kind.field}). Retry in {wait} s (Retry-After); requests are "
            "admitted again as the limit refills.",
            limit=kind.field, value=bucket.capacity,
            tokens=tokens if kind.unit == "tokens" else None, upstream=upstream,
            headers=_headers(draws, verdict), retry_after=verdict.retry_after_s)
