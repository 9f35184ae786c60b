"""The cache against a real redis-server, the in-memory one, and the fail-open rule."""

import asyncio
import json
import logging
import uuid

import pytest
import respx
from prometheus_client import CollectorRegistry
from redis.crc import key_slot

from app.adapters.cache import FailOpenCache, MemoryCache, cache_key, handle_key, receipt_key
from app.adapters.llm.client import LLMClient
from app.adapters.llm.config import ProviderConfig
from app.adapters.llm.registry import build_providers
from app.adapters.metrics import Metrics
from app.adapters.redis_cache import RedisCache
from app.engine.prompts import PromptMessage
from app.service.llm_call import LLMGateway, LLMOptions
from tests.api.test_deep import PROVIDER, URL, completion
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.anyio
SHARED_REDIS = "redis://127.0.0.1:6379/0"


def unique() -> str:
    return f"t-{uuid.uuid4().hex[:8]}"


@pytest.fixture
async def redis_cache():
    cache = RedisCache(SHARED_REDIS)
    yield cache
    await cache.aclose()


async def test_redis_get_set_add_delete_and_ttl(redis_cache):
    key = cache_key(unique(), "synthesize", {"a": 1})
    assert await redis_cache.get(key) is None
    await redis_cache.set(key, b"value", 0.3)
    assert await redis_cache.get(key) == b"value"
    lock = f"{key}:lock"
    assert await redis_cache.add(lock, b"1", 5) is True
    assert await redis_cache.add(lock, b"1", 5) is False
    await redis_cache.delete(lock)
    assert await redis_cache.add(lock, b"1", 5) is True
    await asyncio.sleep(0.4)
    assert await redis_cache.get(key) is None  # the TTL ran out


def test_keys_are_per_tenant_and_spread_over_a_clusters_slots():
    material = {"prompt": [["user", "hi"]], "model": "m"}
    a, b = cache_key("team-a", "synthesize", material), cache_key("team-b", "synthesize",
                                                                   material)
    assert a != b and a.startswith("cs:v2:team-a:synthesize:")
    assert cache_key("team-a", "synthesize", dict(reversed(material.items()))) == a
    # One tenant's keys are not held to one slot (one master): no command uses two.
    keys = [cache_key("default", "synthesize", {"n": n}) for n in range(50)]
    keys += [handle_key("default", f"cs_{n}") for n in range(50)]
    assert len({key_slot(k.encode()) for k in keys}) > 90
    # A tenant or request id with braces cannot make a hash tag of its own.
    odd = receipt_key("{a}", "{b}")
    assert "{" not in odd and "}" not in odd and odd != receipt_key("%7Ba%7D", "{b}")


async def test_memory_cache_expires_and_stays_bounded():
    now = [0.0]
    cache = MemoryCache(max_entries=2, clock=lambda: now[0])
    await cache.set("a", b"1", 10)
    await cache.set("b", b"2", 10)
    await cache.set("c", b"3", 10)
    assert await cache.get("a") is None and await cache.get("c") == b"3"
    now[0] = 11
    assert await cache.get("b") is None


async def test_fail_open_counts_logs_once_and_recovers(caplog):
    metrics = Metrics(CollectorRegistry())
    now = [0.0]
    with RedisServer() as server:
        cache = FailOpenCache(RedisCache(server.url, timeout_s=0.2), metrics, pause_s=1.0,
                              clock=lambda: now[0])
        await cache.set("k", b"v", 60)
        assert await cache.get("k") == b"v"
        server.kill()
        with caplog.at_level(logging.WARNING):
            assert await cache.get("k") is None
            await cache.set("k2", b"v", 60)  # skipped during the pause
            assert await cache.get("k") is None
        assert not cache.healthy
        assert len([r for r in caplog.records if "unavailable" in r.message]) == 1
        assert metrics.registry.get_sample_value("contextsynth_cache_requests_total",
                                                 {"result": "error"}) == 2
        server.start()
        now[0] = 2.0  # past the pause: the next call tries Redis again
        await cache.set("k3", b"back", 60)
        assert cache.healthy and await cache.get("k3") == b"back"
        await cache.aclose()


async def test_garbage_from_redis_is_a_miss(redis_cache):
    metrics = Metrics(CollectorRegistry())
    gateway = LLMGateway(LLMClient({}, metrics), redis_cache, metrics, ttl_s=60, wait_s=1,
                         default_model=None)
    key = cache_key(unique(), "synthesize", {})
    await redis_cache.set(key, b"\x00not json", 60)
    assert await gateway._cached(key) is None


class StoredMeanwhile(MemoryCache):
    """Another replica's call settles between this one's miss and its lock: the reply is
    stored and the lock let go just before ``add``."""

    def __init__(self, reply: bytes) -> None:
        super().__init__()
        self.reply = reply
        self.lock: str | None = None

    async def add(self, key, value, ttl_s):
        if key.endswith(":lock") and self.lock is None:
            self.lock = key
            await self.set(key.removesuffix(":lock"), self.reply, 60)
        return await super().add(key, value, ttl_s)


@respx.mock
async def test_a_reply_stored_just_before_the_lock_is_taken_is_used_not_asked_again():
    route = respx.post(URL).respond(200, json=completion())
    metrics = Metrics(CollectorRegistry())
    reply = json.dumps({"text": "Stored by the other replica.", "model": "gpt-4o-mini",
                        "provider": "main", "usage": [10, 5], "stored_at": 0}).encode()
    cache = StoredMeanwhile(reply)
    llm = LLMClient(build_providers([ProviderConfig.model_validate(PROVIDER)], {}), metrics)
    gateway = LLMGateway(llm, cache, metrics, ttl_s=60, wait_s=5, default_model=None)
    await llm.start()
    try:
        answer = await gateway.ask([PromptMessage("user", "Summarize.")], LLMOptions(),
                                   tenant="t", job="synthesize", max_tokens=100)
    finally:
        await llm.aclose()
    assert cache.lock is not None and route.call_count == 0
    assert answer.completion is not None and answer.cache.hit
    assert answer.completion.text == "Stored by the other replica."
    assert await cache.get(cache.lock) is None  # the lock it took is let go


class Flaky(MemoryCache):
    """A store that fails while ``down`` (as a stopped Redis times out), counting calls."""

    def __init__(self) -> None:
        super().__init__()
        self.down = False
        self.calls = 0

    async def get(self, key):
        self.calls += 1
        if self.down:
            raise TimeoutError("Timeout reading from 127.0.0.1:6390")
        return await super().get(key)

    async def add(self, key, value, ttl_s):
        self.calls += 1
        if self.down:
            raise TimeoutError("Timeout reading from 127.0.0.1:6390")
        return await super().add(key, value, ttl_s)


async def test_with_the_watcher_a_down_store_costs_one_request_then_none():
    inner = Flaky()
    cache = FailOpenCache(inner, Metrics(CollectorRegistry()), pause_s=3600)
    await cache.start()
    await cache.check()  # the watcher's first look leaves this process's marker
    inner.down, inner.calls = True, 0
    assert await cache.get("k") is None  # this request finds it down: one timeout
    for _ in range(50):  # the rest are served without it, however long the pause
        assert await cache.get("k") is None
    assert inner.calls == 1 and not cache.healthy
    await cache.check()  # still down: the watcher, not a request, paid for the look
    assert inner.calls == 2
    inner.down = False
    before = cache.generation
    await cache.check()
    assert cache.healthy and cache.generation == before + 1  # back: save handles again
    await cache.aclose()


async def test_a_store_that_lost_its_data_is_a_new_generation():
    with RedisServer() as server:
        cache = FailOpenCache(RedisCache(server.url, timeout_s=0.2),
                              Metrics(CollectorRegistry()), pause_s=3600)
        await cache.check()
        await cache.check()
        start = cache.generation
        assert start == 0  # nothing was lost
        server.kill()
        server.start()  # the same port, empty: no error ever reached a request
        await cache.check()
        assert cache.healthy and cache.generation == start + 1
        await cache.check()
        assert cache.generation == start + 1
        await cache.aclose()
