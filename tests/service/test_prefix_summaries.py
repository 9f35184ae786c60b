"""The summaries deep /synthesize keeps of a conversation's first turns: found by a later
call of the same conversation only, the longest first, never across tenants or models,
and garbage in the cache is a miss."""

from __future__ import annotations

import pytest

from app.adapters.cache import MemoryCache
from app.adapters.llm.base import Completion, Usage
from app.engine.jobs.base import Plan, Resume
from app.service.llm_call import LLMOptions
from app.service.prefix_summaries import KEEP, PrefixSummaries

pytestmark = pytest.mark.anyio
LLM = LLMOptions(provider="main", model="small")


def resume(*prefixes: str) -> Resume[None]:
    return Resume(prefixes, lambda n, summary: Plan(None))


def said(text: str) -> Completion:
    return Completion(text, "small", "main", Usage(10, 5))


async def test_a_later_call_finds_the_longest_summary_of_its_own_first_turns() -> None:
    kept = PrefixSummaries(MemoryCache(), ttl_s=60)
    await kept.keep(resume("a1", "a2"), "t", "synthesize", LLM, said("two turns"))
    await kept.keep(resume("a1", "a2", "a3"), "t", "synthesize", LLM, said("three turns"))
    found = await kept.find(resume("a1", "a2", "a3", "a4", "a5"), "t", "synthesize", LLM)
    assert found is not None and (found.turns, found.completion.text) == (3, "three turns")
    # The third turn came out otherwise this time: its summary does not stand for it.
    found = await kept.find(resume("a1", "a2", "b3", "b4"), "t", "synthesize", LLM)
    assert found is not None and (found.turns, found.completion.text) == (2, "two turns")


async def test_tenants_and_models_never_share_a_summary() -> None:
    kept = PrefixSummaries(MemoryCache(), ttl_s=60)
    await kept.keep(resume("a1", "a2"), "t", "synthesize", LLM, said("two turns"))
    later = resume("a1", "a2", "a3")
    assert await kept.find(later, "other", "synthesize", LLM) is None
    assert await kept.find(later, "t", "synthesize", LLMOptions(model="large")) is None
    assert await kept.find(later, "t", "synthesize", LLM) is not None


async def test_garbage_in_the_cache_is_a_miss() -> None:
    cache = MemoryCache()
    kept = PrefixSummaries(cache, ttl_s=60)
    await kept.keep(resume("a1", "a2"), "t", "synthesize", LLM, said("two turns"))
    for key in [k for k in list(cache._items) if "synthesize-prefix" in k]:
        await cache.set(key, b"{not json", 60)
    assert await kept.find(resume("a1", "a2", "a3"), "t", "synthesize", LLM) is None
    for key in [k for k in list(cache._items) if "synthesize-prefixes" in k]:
        await cache.set(key, b'{"a": 1}', 60)
    assert await kept.find(resume("a1", "a2", "a3"), "t", "synthesize", LLM) is None


async def test_the_list_of_a_conversation_stays_short() -> None:
    cache = MemoryCache()
    kept = PrefixSummaries(cache, ttl_s=60)
    names = [f"a{n}" for n in range(KEEP + 10)]
    for n in range(1, len(names) + 1):
        await kept.keep(resume(*names[:n]), "t", "synthesize", LLM, said(f"{n} turns"))
    listed = [v for k, (_, v) in cache._items.items() if "synthesize-prefixes" in k]
    assert len(listed) == 1 and listed[0].count(b'"a') == KEEP
    found = await kept.find(resume(*names), "t", "synthesize", LLM)
    assert found is not None and found.turns == len(names)
