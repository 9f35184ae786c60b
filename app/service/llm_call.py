"""Asking the synthesis LLM for a job: cache, single flight, and the shared fallback rule.

Completions are cached by tenant, job, provider, model and prompt, so the same
prompt from any replica is paid once (this is also what makes incremental
history summaries cheap across replicas). Identical concurrent calls share
one call: in this process through a shared task, across replicas through a
lock in the cache that the others wait on.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from app.adapters.cache import Cache, cache_key
from app.adapters.llm.base import Completion, CompletionRequest, LLMError, Provider, Usage
from app.adapters.llm.client import LLMClient
from app.adapters.metrics import Metrics
from app.engine.prompts import PromptMessage

DEFAULT_TEMPERATURE = 0.2
_POLL_S = 0.05


@dataclass(frozen=True, slots=True)
class LLMOptions:
    """What a request says about the synthesis call."""

    provider: str | None = None
    model: str | None = None
    temperature: float | None = None
    on_llm_error: Literal["fallback", "error"] = "fallback"
    force_refresh: bool = False
    # Where the request names the provider: top level for most jobs, under reasoning for
    # /synthesize.
    provider_pointer: str = "/synthesis_provider"


@dataclass(frozen=True, slots=True)
class CacheInfo:
    hit: bool = False
    key_age_seconds: float | None = None


@dataclass(frozen=True, slots=True)
class Answer:
    completion: Completion | None  # None: the call failed and the job falls back
    fallback_reason: str | None = None
    cache: CacheInfo = field(default_factory=CacheInfo)
    # Where a fresh reply goes once its job has used it (``Gateway.keep``): a reply the
    # job could not use is never cached, or the next identical request would get it too.
    key: str | None = None
    ttl_s: float = 0.0


class Gateway(Protocol):
    """What the runner asks of the LLM: a completion for a prompt, or why not."""

    async def ask(self, prompt: Sequence[PromptMessage], options: LLMOptions, *, tenant: str,
                  job: str, max_tokens: int, ttl_s: float | None = None) -> Answer: ...

    async def settle(self, answer: Answer, *, used: bool) -> None:
        """After the job read a fresh reply: cache it if it was used; either way let
        other replicas waiting on the same call go on."""
        ...

    def check(self, options: LLMOptions) -> None:
        """Raise InvalidOption when the request's provider, model or temperature cannot be
        used, whether or not the job will make a call: a request is valid or not by what
        it says, not by whether its conversation needed the model this time."""
        ...


class LLMGateway:
    def __init__(self, llm: LLMClient, cache: Cache, metrics: Metrics, *, ttl_s: float,
                 wait_s: float, default_model: str | None,
                 clock: Callable[[], float] = time.time) -> None:
        self._llm = llm
        self._cache = cache
        self._metrics = metrics
        self._ttl = ttl_s  # the default; a job may ask for its own
        self._wait = wait_s
        self._default_model = default_model
        self._clock = clock
        self._inflight: dict[str, asyncio.Task[Answer]] = {}

    async def ask(self, prompt: Sequence[PromptMessage], options: LLMOptions, *, tenant: str,
                  job: str, max_tokens: int, ttl_s: float | None = None) -> Answer:
        """The completion, or the reason to fall back; raises when the request wants errors."""
        provider = self._checked(options)
        request = CompletionRequest(
            tuple(prompt), model=options.model or self._default_model,
            temperature=DEFAULT_TEMPERATURE if options.temperature is None
            else options.temperature,
            max_tokens=max_tokens)
        key = cache_key(tenant, job, {
            "provider": provider.name, "model": request.model or provider.default_model,
            "temperature": request.temperature, "max_tokens": max_tokens,
            "prompt": [[m.role, m.content] for m in request.messages]})
        if not options.force_refresh:
            cached = await self._cached(key)
            if cached is not None:
                return cached
        task = self._inflight.get(key)
        if task is None:
            task = asyncio.ensure_future(self._call(key, request, provider.name,
                                                    ttl_s or self._ttl,
                                                    options.force_refresh))
            self._inflight[key] = task
            task.add_done_callback(lambda _: self._inflight.pop(key, None))
        try:
            answer = await asyncio.shield(task)
        except LLMError as exc:
            if options.on_llm_error == "error":
                raise
            self._metrics.fallbacks.labels(exc.reason).inc()
            return Answer(None, f"{exc.reason}: {exc.detail}")
        return answer

    def check(self, options: LLMOptions) -> None:
        self._checked(options)

    def _checked(self, options: LLMOptions) -> Provider:
        """The provider the options name, once they are known usable (see ``Gateway``)."""
        provider = self._llm.provider(options.provider, options.provider_pointer)
        self._llm.check_model(options.model, options.provider_pointer.replace(
            "synthesis_provider", "synthesis_model"), provider)
        self._llm.check_temperature(options.temperature, provider,
                                    options.provider_pointer.replace(
                                        "synthesis_provider", "synthesis_temperature"))
        return provider

    async def _cached(self, key: str, *, count: bool = True) -> Answer | None:
        raw = await self._cache.get(key)
        if count:  # polling while another replica calls is not a lookup of its own
            self._metrics.cache_requests.labels("hit" if raw is not None else "miss").inc()
        if raw is None:
            return None
        try:
            data = json.loads(raw)
            completion = Completion(data["text"], data["model"], data["provider"],
                                    Usage(*data["usage"]), bool(data.get("cut", False)))
            age = max(self._clock() - float(data["stored_at"]), 0.0)
        except (ValueError, KeyError, TypeError):
            return None  # garbage in the cache is a miss, never an error
        return Answer(completion, cache=CacheInfo(True, round(age, 3)))

    async def _call(self, key: str, request: CompletionRequest, provider: str,
                    ttl_s: float, refresh: bool = False) -> Answer:
        lock = f"{key}:lock"
        owner = await self._cache.add(lock, b"1", self._wait)
        if not owner:
            # Another replica is making this very call: wait for its result.
            deadline = self._clock() + self._wait
            while self._clock() < deadline:
                await asyncio.sleep(_POLL_S)
                cached = await self._cached(key, count=False)
                if cached is not None:
                    return cached
                if await self._cache.add(lock, b"1", self._wait):
                    owner = True  # it gave up (failed or died): our turn
                    break
        if owner and not refresh:
            # The last owner stores its reply, then lets the lock go: between our miss and
            # taking the lock it may have done both. Its reply is ours then (unless the
            # caller asked for a fresh one).
            cached = await self._cached(key, count=False)
            if cached is not None:
                await self._cache.delete(lock)
                return cached
        try:
            completion = await self._llm.complete(request, provider)
        except BaseException:
            if owner:
                await self._cache.delete(lock)
            raise
        # The lock stays until the job has read the reply (``settle``): replicas waiting
        # on it then find the cached reply, or, if it was unusable, make the call anew.
        return Answer(completion, key=key, ttl_s=ttl_s)

    async def settle(self, answer: Answer, *, used: bool) -> None:
        completion = answer.completion
        if completion is None or answer.key is None or answer.cache.hit:
            return
        if used:
            await self._cache.set(answer.key, json.dumps({
                "text": completion.text, "model": completion.model,
                "provider": completion.provider,
                "usage": [completion.usage.input_tokens, completion.usage.output_tokens],
                "cut": completion.cut, "stored_at": self._clock()}).encode(), answer.ttl_s)
        await self._cache.delete(f"{answer.key}:lock")
