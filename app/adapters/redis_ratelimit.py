"""Rate limits in Redis, shared by every replica: one Lua script per take, so checking
and drawing from a tenant's buckets is one round trip and atomic.

Each bucket is a hash ``cs:v2:limit:{tenant}:<bucket>`` holding its units and when
they were counted. The tenant is the hash tag: one take's keys share a slot, which a
Redis Cluster requires of a script's keys. A key lives for its bucket's period, the
longest a bucket takes to fill again: an expired key reads as a full bucket.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from opentelemetry.trace import Tracer
from redis.commands.core import AsyncScript

from app.adapters.cache import KEY_PREFIX, plain
from app.adapters.ratelimit import Bucket, Draw, Verdict
from app.adapters.redis_client import redis_client
from app.adapters.tracing import NO_TRACER

# KEYS: one per bucket. ARGV: the time in seconds (empty: Redis's own clock), then per
# bucket its capacity, its period in seconds and the cost drawn from it. Returns the
# refused bucket's index (1-based, 0: granted), the wait in milliseconds, and each
# bucket's units (after the draw when granted). The same steps as ``ratelimit.decide``.
_TAKE = """
local now = tonumber(ARGV[1])
if now == nil then
  local t = redis.call('TIME')
  now = tonumber(t[1]) + tonumber(t[2]) / 1000000
end
local units, ats = {}, {}
local refused, wait = 0, 0
for i = 1, #KEYS do
  local capacity = tonumber(ARGV[3 * i - 1])
  local rate = capacity / tonumber(ARGV[3 * i])
  local cost = tonumber(ARGV[3 * i + 1])
  local held = redis.call('HMGET', KEYS[i], 'units', 'at')
  local level, at = tonumber(held[1]), tonumber(held[2])
  if level == nil or at == nil then
    level, at = capacity, now
  elseif now > at then
    level = level + (now - at) * rate
  end
  if level > capacity then level = capacity end
  units[i], ats[i] = level, math.max(at, now)
  if cost > level then
    local lacking = (cost - level) / rate
    if lacking > wait then refused, wait = i, lacking end
  end
end
local out = {refused, math.ceil(wait * 1000)}
for i = 1, #KEYS do
  local level = units[i]
  if refused == 0 then
    level = level - tonumber(ARGV[3 * i + 1])
    redis.call('HSET', KEYS[i], 'units', tostring(level), 'at', tostring(ats[i]))
    redis.call('PEXPIRE', KEYS[i], math.ceil(tonumber(ARGV[3 * i]) * 1000))
  end
  out[#out + 1] = math.floor(level)
end
return out
"""


def limit_key(tenant: str, bucket: Bucket, prefix: str = KEY_PREFIX) -> str:
    # An empty tag is no tag (Redis would hash the whole key): the empty tenant's is
    # "%", which no other escaped name is.
    return f"{prefix}:limit:{{{plain(tenant) or '%'}}}:{bucket.name}"


class RedisLimiter:
    """``clock``: the time each take is counted at; None (the default) uses Redis's own
    clock, one for every replica, so that replicas whose clocks disagree still refill
    a bucket once. Tests pass theirs. ``prefix``: of every key. ``tracer``: the script's
    calls as spans, as every Redis client's."""

    def __init__(self, url: str, *, cluster: bool = False, timeout_s: float = 0.5,
                 clock: Callable[[], float] | None = None, prefix: str = KEY_PREFIX,
                 tracer: Tracer = NO_TRACER) -> None:
        self._client = redis_client(url, cluster=cluster, timeout_s=timeout_s, tracer=tracer)
        # redis' stubs type register_script for the single-node client only.
        self._script: AsyncScript = self._client.register_script(_TAKE)  # type: ignore[misc]
        self._clock = clock
        self._prefix = prefix

    async def take(self, tenant: str, draws: Sequence[Draw]) -> Verdict:
        keys = [limit_key(tenant, d.bucket, self._prefix) for d in draws]
        args: list[str | int | float] = ["" if self._clock is None else repr(self._clock())]
        for d in draws:
            args += [d.bucket.capacity, repr(d.bucket.period_s), d.cost]
        out = await self._script(keys=keys, args=args)
        if not isinstance(out, list) or len(out) != 2 + len(draws):
            raise TypeError(f"unexpected answer from the rate limit script: {out!r}"[:200])
        refused, wait_ms, *remaining = (int(v) for v in out)
        return Verdict(draws[refused - 1].bucket if refused else None,
                       wait_ms / 1000 if refused else 0.0,
                       tuple(max(0, r) for r in remaining))

    async def aclose(self) -> None:
        await self._client.aclose()

