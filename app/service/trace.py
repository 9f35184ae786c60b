"""Serving ``/summarize-trace``: thresholds, then llm → deterministic → truncation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from app.engine.errors import LLMNotConfigured
from app.engine.modes import no_llm_hint
from app.engine.trace import (
    Action,
    Group,
    TraceOptions,
    TraceResult,
    TraceSummarizer,
    parse_scratchpad,
)
from app.events import Emitter
from app.llm.base import Completion, LLMBadResponse
from app.metrics import Metrics
from app.service.handles import HandleStore
from app.service.llm_call import CacheInfo, LLMGateway, LLMOptions
from app.service.work import Worker
from app.settings import Settings

TRACE_MAX_TOKENS = 1000


@dataclass(frozen=True, slots=True)
class TraceJob:
    actions: tuple[Action, ...] | None
    scratchpad: str | None
    options: TraceOptions
    mode: Literal["auto", "fast", "deep"]
    llm: LLMOptions = field(default_factory=LLMOptions)
    tenant: str = "default"


@dataclass(frozen=True, slots=True)
class TraceOutcome:
    result: TraceResult
    actions_total: int
    mode: str
    fallback_reason: str | None = None
    completion: Completion | None = None
    cache: CacheInfo = field(default_factory=CacheInfo)


class TraceService:
    def __init__(self, summarizer: TraceSummarizer, settings: Settings, metrics: Metrics,
                 gateway: LLMGateway | None, handles: HandleStore | None = None,
                 events: Emitter | None = None) -> None:
        self._handles = handles
        self._events = events
        self._summarizer = summarizer
        self._settings = settings
        self._metrics = metrics
        self._gateway = gateway

    async def run(self, job: TraceJob) -> TraceOutcome:
        if job.mode == "deep" and self._gateway is None:
            raise LLMNotConfigured(f"mode 'deep' writes the summary with an LLM, and none is "
                                   f"configured. {no_llm_hint('fast')}", pointer="/mode")
        size = len(job.scratchpad or "") + sum(len(a.observation) for a in job.actions or ())
        call = Worker(offload=size > self._settings.offload_chars)
        if job.actions is not None:
            actions = job.actions
        else:
            actions = tuple(await call(parse_scratchpad, job.scratchpad or ""))
        plan = await call(self._summarizer.plan, actions, job.options)
        mode = "fast"
        fallback: str | None = None
        completion: Completion | None = None
        groups: tuple[Group, ...] | None = plan.groups if plan.fired else None
        strategy = "deterministic"
        cache = CacheInfo()
        if plan.fired and self._gateway is not None and job.mode != "fast" and \
                plan.llm_worth_it:
            mode = "deep"
            answer = await self._gateway.ask(plan.prompt, job.llm, tenant=job.tenant,
                                             job="summarize-trace", max_tokens=TRACE_MAX_TOKENS)
            completion, fallback, cache = answer.completion, answer.fallback_reason, answer.cache
            from_llm = (self._summarizer.llm_groups(plan, completion.text)
                        if completion is not None else None)
            if completion is not None and from_llm is None:
                unusable = LLMBadResponse("the reply did not give a line for every tool")
                if job.llm.on_llm_error == "error":
                    raise unusable
                self._metrics.fallbacks.labels(unusable.reason).inc()
                fallback = f"{unusable.reason}: {unusable.detail}"
            if from_llm is not None:
                groups, strategy = from_llm, "llm"
            else:
                mode = "fast"
        result = await call(self._summarizer.finish, plan, groups, strategy)
        if self._handles is not None and result.handle is not None:
            await self._handles.save(job.tenant, result.handle, {
                "format": "trace", "kind": result.strategy,
                "actions": [action_dict(a) for a in result.summarized]})
        if self._events is not None:
            await self._events.emit("trace.summarized", job.tenant, {
                "strategy": result.strategy, "mode": mode, "degraded": fallback is not None,
                "actions_total": len(actions), "actions_kept": len(result.recent),
                "stats": {"tokens_before": result.tokens_before,
                          "tokens_after": result.tokens_after}})
        m = self._metrics
        m.tokens.labels("summarize-trace", "in").inc(result.tokens_before)
        m.tokens.labels("summarize-trace", "out").inc(result.tokens_after)
        if result.tokens_before:
            m.compression.labels("summarize-trace").observe(
                result.tokens_after / result.tokens_before)
        return TraceOutcome(result, len(actions), mode, fallback, completion, cache)


def action_dict(action: Action) -> dict[str, str | None]:
    return {"action": action.action, "action_input": action.action_input,
            "observation": action.observation, "outcome": action.outcome,
            "thought": action.thought}
