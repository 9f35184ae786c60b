"""The summaries earlier calls made of the first part of a conversation, for the next
call to update rather than make again (see ``engine.jobs.base.Resume``).

The service keeps nothing per conversation but its cache. A reply that summarized the
first part of a conversation is kept under that part's name (a digest of its content);
under the name of the conversation's shortest such part, which every later call of the
same conversation has too, a short list of the parts summarized so far. A later call,
whose part to summarize has grown at its end, finds the longest of its own parts in
that list and asks the model to update that summary with only what follows it.

Keys are tenant-scoped like every other key, and name the provider and model the
request asked for: one model's summary is not handed to another to update. Losing any
of it (an eviction, a restart, two calls racing to update the list) costs one call
with the whole part, never a wrong answer: a name found stands for the same content.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from app.adapters.cache import Cache, cache_key
from app.adapters.llm.base import Completion, Usage
from app.engine.jobs.base import Resume
from app.service.llm_call import LLMOptions

# How many summarized parts the list of a conversation remembers: the newest are the
# ones a later call extends.
KEEP = 16
# How many of them a call looks up, longest first, before it sends the whole part.
_TRIES = 3


@dataclass(frozen=True, slots=True)
class Found:
    turns: int  # the part's place among the plan's prefixes, from 1
    completion: Completion  # the reply that summarized it
    age_s: float


class PrefixSummaries:
    def __init__(self, cache: Cache, *, ttl_s: float,
                 clock: Callable[[], float] = time.time) -> None:
        self._cache = cache
        self._ttl = ttl_s
        self._clock = clock

    async def find(self, resume: Resume[Any], tenant: str, job: str, llm: LLMOptions,
                   ) -> Found | None:
        """The longest part of ``resume`` an earlier call summarized, if one is kept."""
        prefixes = resume.prefixes
        if not prefixes:
            return None
        listed = _names(await self._cache.get(self._list_key(resume, tenant, job, llm)))
        place = {name: n for n, name in enumerate(prefixes, 1)}
        for n in sorted({place[name] for name in listed if name in place},
                        reverse=True)[:_TRIES]:
            found = _record(await self._cache.get(
                self._key(prefixes[n - 1], tenant, job, llm)), self._clock())
            if found is not None:
                completion, age = found
                return Found(n, completion, age)
        return None

    async def keep(self, resume: Resume[Any], tenant: str, job: str, llm: LLMOptions,
                   completion: Completion) -> None:
        """Keep ``completion`` as the summary of the last part of ``resume``, and list it."""
        if not resume.prefixes:
            return
        name = resume.prefixes[-1]
        await self._cache.set(self._key(name, tenant, job, llm), json.dumps({
            "text": completion.text, "model": completion.model,
            "provider": completion.provider,
            "usage": [completion.usage.input_tokens, completion.usage.output_tokens],
            "stored_at": self._clock()}).encode(), self._ttl)
        key = self._list_key(resume, tenant, job, llm)
        listed = [n for n in _names(await self._cache.get(key)) if n != name]
        await self._cache.set(key, json.dumps([*listed[-(KEEP - 1):], name]).encode(),
                              self._ttl)

    @staticmethod
    def _key(name: str, tenant: str, job: str, llm: LLMOptions) -> str:
        return cache_key(tenant, f"{job}-prefix", {
            "prefix": name, "provider": llm.provider, "model": llm.model})

    @staticmethod
    def _list_key(resume: Resume[Any], tenant: str, job: str, llm: LLMOptions) -> str:
        return cache_key(tenant, f"{job}-prefixes", {
            "first": resume.prefixes[0], "provider": llm.provider, "model": llm.model})


def _names(raw: bytes | None) -> list[str]:
    """The list kept under a conversation's first part; garbage reads as empty."""
    if raw is None:
        return []
    try:
        data = json.loads(raw)
    except ValueError:
        return []
    return [n for n in data if isinstance(n, str)] if isinstance(data, list) else []


def _record(raw: bytes | None, now: float) -> tuple[Completion, float] | None:
    """A kept summary and its age; garbage is a miss, never an error."""
    if raw is None:
        return None
    try:
        data = json.loads(raw)
        completion = Completion(str(data["text"]), str(data["model"]), str(data["provider"]),
                                Usage(*data["usage"]))
        age = max(now - float(data["stored_at"]), 0.0)
    except (ValueError, KeyError, TypeError):
        return None
    return completion, round(age, 3)
