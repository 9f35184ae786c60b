"""Serving ``/summarize-recall`` and ``/reflect``: LLM when configured, rules otherwise."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from app.engine.errors import LLMNotConfigured
from app.engine.modes import no_llm_hint
from app.engine.prompts import REFLECT_REPAIR, PromptMessage
from app.engine.recall import Memory, RecallAnswer, check, extractive, prompt, select
from app.engine.reflect import Call, PastIteration, Reflection, Reflector
from app.engine.tokens import TokenCounter
from app.events import Emitter
from app.llm.base import Completion, LLMBadResponse
from app.metrics import Metrics
from app.service.llm_call import CacheInfo, LLMGateway, LLMOptions
from app.settings import Settings

Mode = Literal["auto", "deep", "extractive", "fast"]
_CHARS_PER_TOKEN = 4
REFLECT_MAX_TOKENS = 1500


@dataclass(frozen=True, slots=True)
class Ran:
    """What every LLM-or-rules job reports beside its result."""

    mode: str
    fallback_reason: str | None = None
    completion: Completion | None = None
    cache: CacheInfo = field(default_factory=CacheInfo)


def _require(gateway: LLMGateway | None, mode: str, job: str, instead: str) -> None:
    if mode == "deep" and gateway is None:
        raise LLMNotConfigured(f"mode 'deep' of {job} needs an LLM, and none is configured. "
                               f"{no_llm_hint(instead)}", pointer="/mode")


class RecallService:
    def __init__(self, settings: Settings, metrics: Metrics, gateway: LLMGateway | None,
                 counter: TokenCounter, events: Emitter | None = None) -> None:
        self._settings = settings
        self._counter = counter
        self._metrics = metrics
        self._gateway = gateway
        self._events = events

    async def run(self, query: str, memories: Sequence[Memory], *, k: int, max_tokens: int,
                  mode: Mode, llm: LLMOptions, tenant: str
                  ) -> tuple[RecallAnswer, list[Memory], Ran]:
        _require(self._gateway, mode, "/summarize-recall", "extractive")
        chosen = select(memories, query, k)
        ran = Ran("extractive")
        answer: RecallAnswer | None = None
        if self._gateway is not None and mode != "extractive":
            reply = await self._gateway.ask(prompt(query, chosen), llm, tenant=tenant,
                                            job="summarize-recall", max_tokens=max_tokens,
                                            ttl_s=self._settings.recall_cache_ttl_s)
            ran = Ran("deep", reply.fallback_reason, reply.completion, reply.cache)
            if reply.completion is not None:
                answer = check(reply.completion.text, chosen)
            else:
                ran = replace(ran, mode="extractive")
        if answer is None:
            answer = extractive(query, chosen, max_tokens * _CHARS_PER_TOKEN)
        # Recall compresses too: the chosen memories in, one answer out.
        tokens_in = sum(self._counter.text(m.text) for m in chosen)
        tokens_out = self._counter.text(answer.summary)
        self._metrics.tokens.labels("summarize-recall", "in").inc(tokens_in)
        self._metrics.tokens.labels("summarize-recall", "out").inc(tokens_out)
        if tokens_in:
            self._metrics.compression.labels("summarize-recall").observe(tokens_out / tokens_in)
        if self._events is not None:
            await self._events.emit("recall.summarized", tenant, {
                "mode": ran.mode, "degraded": ran.fallback_reason is not None,
                "memories_given": len(memories), "memories_chosen": len(chosen),
                "sources_used": [c.memory.id for c in answer.citations],
                "refused": answer.refused, "removed_citations": list(answer.removed_citations),
                "cache_hit": ran.cache.hit})
        return answer, chosen, ran


class ReflectService:
    def __init__(self, reflector: Reflector, metrics: Metrics, gateway: LLMGateway | None,
                 events: Emitter | None = None) -> None:
        self._reflector = reflector
        self._metrics = metrics
        self._gateway = gateway
        self._events = events

    async def run(self, goal: str, calls: Sequence[Call], history: Sequence[PastIteration], *,
                  mode: Mode, llm: LLMOptions, tenant: str,
                  iteration: int | None) -> tuple[Reflection, Ran]:
        _require(self._gateway, mode, "/reflect", "fast")
        reflection: Reflection | None = None
        ran = Ran("fast")
        if self._gateway is not None and mode != "fast":
            reflection, ran = await self._deep(goal, calls, history, llm, tenant)
        if reflection is None:
            reflection = self._reflector.heuristic(goal, calls, history)
        if self._events is not None:
            await self._events.emit("reflection.recorded", tenant, {
                "iteration": iteration, "mode": ran.mode,
                "degraded": ran.fallback_reason is not None,
                "progress_assessment": reflection.progress, "stuck": reflection.stuck,
                "calls": len(calls), "errors": sum(e.failed for e in reflection.calls)})
        return reflection, ran

    async def _deep(self, goal: str, calls: Sequence[Call], history: Sequence[PastIteration],
                    llm: LLMOptions, tenant: str) -> tuple[Reflection | None, Ran]:
        assert self._gateway is not None
        messages: list[PromptMessage] = list(self._reflector.prompt(goal, calls, history))
        for attempt in range(2):  # the answer, then one repair
            reply = await self._gateway.ask(messages, llm, tenant=tenant, job="reflect",
                                            max_tokens=REFLECT_MAX_TOKENS)
            if reply.completion is None:
                return None, Ran("fast", reply.fallback_reason)
            try:
                reflection = self._reflector.from_reply(reply.completion.text, calls, history)
            except ValueError as exc:
                if attempt == 0:
                    messages += [PromptMessage("assistant", reply.completion.text),
                                 PromptMessage("user", REFLECT_REPAIR.format(problem=exc))]
                    continue
                bad = LLMBadResponse(f"the reply was not valid reflection JSON: {exc}")
                if llm.on_llm_error == "error":
                    raise bad from exc
                self._metrics.fallbacks.labels(bad.reason).inc()
                return None, Ran("fast", f"{bad.reason}: {bad.detail}", reply.completion)
            return reflection, Ran("deep", None, reply.completion, reply.cache)
        raise AssertionError("unreachable")
