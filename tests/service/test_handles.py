"""Expand handles without Redis: the in-process store holds them by bytes, so a busy
worker's handles live out their time instead of the newest few thousand."""

import pytest

from app.adapters.cache import MemoryCache, handle_key
from app.service.cache_plan import cache_plan
from app.service.handles import HandleStore

pytestmark = pytest.mark.anyio


async def test_the_memory_cache_is_bounded_by_bytes_least_recently_used_first():
    cache = MemoryCache(max_bytes=3 * (1000 + 1 + 200))
    for key in "abc":
        await cache.set(key, b"x" * 1000, 60)
    assert await cache.get("a") is not None  # a is now the most recently used
    await cache.set("d", b"x" * 1000, 60)
    assert await cache.get("b") is None
    assert all([await cache.get(k) is not None for k in "acd"])
    assert cache.bytes_held <= 3 * 1201
    await cache.delete("a")
    assert cache.bytes_held == 2 * 1201


async def test_a_thousand_agents_handles_all_expand_within_the_default_budget():
    # 1,000 agents, each with 30 spans of about 1.5 KB saved once (an agent resends its
    # prefix, so the old spans of its newest receipt were saved long before): 45 MB.
    # A bound of 10,000 entries lost the first agents' handles; the default budget in a
    # 1 GiB pod (its share of the caches' 384 MiB) holds them all.
    store = HandleStore(MemoryCache(max_bytes=cache_plan(1 << 30).in_process), ttl_s=3600)
    original = "y" * 1500
    for agent in range(1000):
        for span in range(30):
            await store.save("default", f"cs_{agent}_{span}", {"messages": [original]})
    first = await store.load("default", "cs_0_0")
    assert first is not None and first["messages"] == [original]


def test_the_budget_is_a_share_of_the_workers_memory():
    assert cache_plan(1 << 30).in_process == int((384 << 20) * 0.15)  # about 58 MiB
    assert cache_plan(None).in_process == int((512 << 20) * 0.15)


async def test_a_large_span_is_held_compressed_and_expands_as_it_was():
    cache = MemoryCache(max_bytes=cache_plan(None).in_process)
    store = HandleStore(cache, ttl_s=3600)
    log = "".join(f"2026-11-26 10:{n % 60:02d} worker {n % 7} retrying broker-{n % 3}\n"
                  for n in range(40_000))  # a 2 MB tool output
    await store.save("default", "cs_big", {"messages": [{"role": "tool", "content": log}]})
    assert cache.bytes_held < len(log) / 4  # not 2 MB of the worker's memory for an hour
    loaded = await store.load("default", "cs_big")
    assert loaded is not None and loaded["messages"][0]["content"] == log
    # What a replica of an earlier version stored, uncompressed, still expands.
    await cache.set(handle_key("default", "cs_old"), b'{"handle": "cs_old", "messages": []}',
                    3600)
    assert await store.load("default", "cs_old") == {"handle": "cs_old", "messages": []}


async def test_a_document_of_many_messages_is_written_and_compressed_a_message_at_a_time():
    cache = MemoryCache(max_bytes=cache_plan(None).in_process)
    store = HandleStore(cache, ttl_s=3600)
    messages = [{"role": "tool", "tool_call_id": f"c{n}", "content": f"line {n}\n" * 5000}
                for n in range(12)]
    await store.save("default", "cs_many", {"format": "openai", "messages": messages})
    stored = await cache.get(handle_key("default", "cs_many"))
    assert stored is not None and stored[:1] == b"x"  # compressed
    assert await store.load("default", "cs_many") == {
        "handle": "cs_many", "format": "openai", "messages": messages}
    await store.save("default", "cs_small", {"format": "openai", "messages": messages[:0]})
    assert await cache.get(handle_key("default", "cs_small")) == (
        b'{"handle":"cs_small","format":"openai","messages":[]}')
