"""The token buckets of the rate limits: the same cases against the in-process limiter
and the Redis one (a real redis-server, its Lua script), each on a clock the test
moves; then what only Redis has: its keys' slot and expiry, its own clock, a Redis
Cluster, and failing open when it dies."""

from __future__ import annotations

import asyncio
import logging
import shutil
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import redis
from prometheus_client import CollectorRegistry
from redis.crc import key_slot

from app.adapters.metrics import Metrics
from app.adapters.ratelimit import Bucket, Draw, FailOpenLimiter, Limiter, MemoryLimiter
from app.adapters.redis_ratelimit import RedisLimiter, limit_key
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.anyio
SHARED_REDIS = "redis://127.0.0.1:6379/0"
# This helper's own redis-servers (one it kills, one cluster node and its bus).
DOOMED_PORT, CLUSTER_PORT, CLUSTER_BUS = 6391, 6394, 6395

REQUESTS = Bucket("requests_per_minute", 3, 60.0)  # one every 20 s
TOKENS = Bucket("tokens_per_minute", 600, 60.0)  # ten a second
DAY = Bucket("tokens_per_day", 1000, 86_400.0)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["memory", "redis"])
async def bucketed(request: pytest.FixtureRequest) -> AsyncIterator[tuple[Limiter, Clock]]:
    clock = Clock()
    limiter: Limiter
    if request.param == "memory":
        limiter = MemoryLimiter(clock)
    else:
        # Keys of this test's own: nothing else in the shared Redis is read or written.
        limiter = RedisLimiter(SHARED_REDIS, clock=clock, prefix=f"test-rl:{uuid.uuid4().hex}")
    yield limiter, clock
    await limiter.aclose()


def request_and(tokens: int, *more: Bucket) -> list[Draw]:
    return [Draw(REQUESTS, 1), *(Draw(b, tokens) for b in more)]


async def test_a_burst_up_to_the_capacity_then_one_per_refill(bucketed):
    limiter, clock = bucketed
    got = [await limiter.take("t", [Draw(REQUESTS, 1)]) for _ in range(3)]
    assert [v.granted for v in got] == [True] * 3
    assert [v.remaining for v in got] == [(2,), (1,), (0,)]
    refused = await limiter.take("t", [Draw(REQUESTS, 1)])
    assert refused.refused == REQUESTS
    assert refused.retry_after_s == pytest.approx(20.0, abs=0.01)
    clock.now += 19.9
    assert not (await limiter.take("t", [Draw(REQUESTS, 1)])).granted
    clock.now += 0.1
    assert (await limiter.take("t", [Draw(REQUESTS, 1)])).granted
    assert not (await limiter.take("t", [Draw(REQUESTS, 1)])).granted


async def test_a_refused_take_draws_from_no_bucket(bucketed):
    limiter, clock = bucketed
    assert (await limiter.take("t", request_and(500, TOKENS))).remaining == (2, 100)
    # Requests are left, tokens are not: nothing is drawn, the request included.
    refused = await limiter.take("t", request_and(400, TOKENS))
    assert refused.refused == TOKENS and refused.remaining == (2, 100)
    assert refused.retry_after_s == pytest.approx(30.0, abs=0.01)  # 300 tokens at 10/s
    clock.now += 30
    # The requests refilled too (1.5 in 30 s, to their capacity of 3).
    assert (await limiter.take("t", request_and(400, TOKENS))).remaining == (2, 0)


async def test_the_wait_is_the_longest_of_the_buckets_that_lack(bucketed):
    limiter, clock = bucketed
    await limiter.take("t", request_and(900, TOKENS, DAY))  # no: 900 > 600 a minute
    assert (await limiter.take("t", request_and(500, TOKENS, DAY))).granted
    clock.now += 60
    refused = await limiter.take("t", request_and(550, TOKENS, DAY))
    # The minute has refilled; the day lacks 50 tokens less the minute's refill, at
    # 1000 a day (86.4 s a token): 71 minutes.
    assert refused.refused == DAY
    assert refused.retry_after_s == pytest.approx(50 * 86.4 - 60, rel=1e-3)
    assert refused.remaining == (3, 600, 500)


async def test_a_bucket_never_holds_more_than_its_capacity(bucketed):
    limiter, clock = bucketed
    await limiter.take("t", request_and(600, TOKENS))
    clock.now += 3600
    got = await limiter.take("t", request_and(1, TOKENS))
    assert got.remaining == (2, 599)


async def test_tenants_have_buckets_of_their_own(bucketed):
    limiter, _ = bucketed
    for _ in range(3):
        await limiter.take("a", [Draw(REQUESTS, 1)])
    assert not (await limiter.take("a", [Draw(REQUESTS, 1)])).granted
    assert (await limiter.take("b", [Draw(REQUESTS, 1)])).granted
    # A tenant whose name would make a hash tag of its own is still one tenant.
    assert (await limiter.take("{a}", [Draw(REQUESTS, 1)])).granted


async def test_a_clock_that_goes_back_refills_nothing(bucketed):
    limiter, clock = bucketed
    for _ in range(3):
        await limiter.take("t", [Draw(REQUESTS, 1)])
    clock.now -= 100  # another replica's clock, behind
    assert not (await limiter.take("t", [Draw(REQUESTS, 1)])).granted
    clock.now += 100 + 20
    assert (await limiter.take("t", [Draw(REQUESTS, 1)])).granted


async def test_a_lowered_capacity_applies_at_once(bucketed):
    limiter, _ = bucketed
    await limiter.take("t", [Draw(Bucket("tokens_per_minute", 10_000, 60.0), 10)])
    lowered = Bucket("tokens_per_minute", 100, 60.0)
    assert (await limiter.take("t", [Draw(lowered, 60)])).remaining == (40,)


async def test_a_take_of_nothing_is_granted_with_what_is_left(bucketed):
    limiter, _ = bucketed
    await limiter.take("t", request_and(200, TOKENS))
    got = await limiter.take("t", [Draw(TOKENS, 0)])
    assert got.granted and got.remaining == (400,)


# What only Redis has.

def test_one_takes_keys_share_a_slot_and_tenants_spread():
    buckets = (REQUESTS, TOKENS, DAY)
    for tenant in ("team-a", "{x}", "}", "", "%", "a}b{c"):
        keys = [limit_key(tenant, b) for b in buckets]
        assert len({key_slot(k.encode()) for k in keys}) == 1, keys
    slots = {key_slot(limit_key(f"tenant-{n}", REQUESTS).encode()) for n in range(100)}
    assert len(slots) > 90


async def test_a_key_lives_as_long_as_its_bucket_takes_to_refill():
    prefix = f"test-rl:{uuid.uuid4().hex}"
    limiter = RedisLimiter(SHARED_REDIS, clock=Clock(), prefix=prefix)
    try:
        await limiter.take("t", request_and(5, TOKENS, DAY))
    finally:
        await limiter.aclose()
    plain = redis.Redis.from_url(SHARED_REDIS)
    ttl = {b.name: plain.pttl(limit_key("t", b, prefix)) for b in (REQUESTS, TOKENS, DAY)}
    plain.delete(*(limit_key("t", b, prefix) for b in (REQUESTS, TOKENS, DAY)))
    assert 59_000 < ttl["requests_per_minute"] <= 60_000
    assert 59_000 < ttl["tokens_per_minute"] <= 60_000
    assert 86_399_000 < ttl["tokens_per_day"] <= 86_400_000


async def test_without_a_clock_redis_counts_by_its_own():
    limiter = RedisLimiter(SHARED_REDIS, prefix=f"test-rl:{uuid.uuid4().hex}")
    fast = Bucket("requests_per_minute", 2, 0.5)  # one every quarter second
    try:
        assert (await limiter.take("t", [Draw(fast, 2)])).granted
        refused = await limiter.take("t", [Draw(fast, 1)])
        assert refused.refused == fast and 0.1 < refused.retry_after_s <= 0.25
        await asyncio.sleep(0.3)
        assert (await limiter.take("t", [Draw(fast, 1)])).granted
    finally:
        await limiter.aclose()


@pytest.fixture
def one_node_cluster(tmp_path: Path) -> Iterator[str]:
    """A Redis Cluster of one master holding every slot: it refuses a script whose keys
    are in two slots (CROSSSLOT) as a larger one would."""
    binary = shutil.which("redis-server")
    assert binary
    proc = subprocess.Popen(
        [binary, "--port", str(CLUSTER_PORT), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--cluster-enabled", "yes",
         "--cluster-port", str(CLUSTER_BUS),
         "--cluster-config-file", str(tmp_path / "nodes.conf"), "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    node = redis.Redis(port=CLUSTER_PORT, socket_connect_timeout=0.2)
    try:
        _until(lambda: node.ping())
        node.execute_command("CLUSTER", "ADDSLOTSRANGE", "0", "16383")
        _until(lambda: b"cluster_state:ok" in node.execute_command("CLUSTER", "INFO"))
        yield f"redis://127.0.0.1:{CLUSTER_PORT}/0"
    finally:
        proc.kill()
        proc.wait(timeout=10)


def _until(ready: object, timeout_s: float = 10) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if ready():  # type: ignore[operator]
                return
        except redis.exceptions.RedisError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError("redis did not become ready")
        time.sleep(0.05)


async def test_on_a_redis_cluster(one_node_cluster):
    clock = Clock()
    limiter = RedisLimiter(one_node_cluster, cluster=True, clock=clock)
    try:
        for tenant in ("team-a", "{odd}"):
            assert (await limiter.take(tenant, request_and(600, TOKENS, DAY))).granted
            refused = await limiter.take(tenant, request_and(1, TOKENS, DAY))
            assert refused.refused == TOKENS
    finally:
        await limiter.aclose()


async def test_a_dead_redis_fails_open_counted_logged_once_then_checks_again(caplog):
    metrics = Metrics(CollectorRegistry())
    unchecked = metrics.registry.get_sample_value
    pause = [0.0]
    server = RedisServer()
    server.port = DOOMED_PORT
    with server:
        limiter = FailOpenLimiter(RedisLimiter(server.url, timeout_s=0.2, clock=Clock()),
                                  metrics, pause_s=60, clock=lambda: pause[0])
        for _ in range(3):
            assert (await limiter.take("t", [Draw(REQUESTS, 1)])).granted
        assert not (await limiter.take("t", [Draw(REQUESTS, 1)])).granted
        server.kill()
        with caplog.at_level(logging.WARNING, "app.adapters.ratelimit"):
            # Served, as if every bucket were full: the limits fail open.
            got = [await limiter.take("t", [Draw(REQUESTS, 1)]) for _ in range(3)]
        assert all(v.granted and v.remaining == (3,) for v in got)
        assert unchecked("contextsynth_rate_limit_unchecked_total") == 3
        assert not limiter.healthy
        assert len([r for r in caplog.records if "unchecked" in r.message]) == 1
        server.start()  # empty: the buckets start full again
        assert (await limiter.take("t", [Draw(REQUESTS, 1)])).remaining == (3,)  # paused
        pause[0] = 61
        for _ in range(3):
            assert (await limiter.take("t", [Draw(REQUESTS, 1)])).granted
        assert not (await limiter.take("t", [Draw(REQUESTS, 1)])).granted
        assert limiter.healthy
        assert unchecked("contextsynth_rate_limit_unchecked_total") == 4
        await limiter.aclose()
