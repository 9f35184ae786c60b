"""Serving ``/compress-history``: trigger, summary (LLM or deterministic), fallback."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from app.engine.errors import LLMNotConfigured
from app.engine.formats import Payload, WireFormat, resolve_format
from app.engine.history import HistoryCompressor, HistoryOptions, HistoryResult
from app.engine.modes import no_llm_hint
from app.events import Emitter
from app.llm.base import Completion
from app.metrics import Metrics
from app.service.handles import HandleStore
from app.service.limits import check_limits, conversation
from app.service.llm_call import CacheInfo, LLMGateway, LLMOptions
from app.service.work import Worker
from app.settings import Settings

SUMMARY_MAX_TOKENS = 2000


@dataclass(frozen=True, slots=True)
class HistoryJob:
    payload: Payload
    format: str
    options: HistoryOptions
    mode: Literal["auto", "fast", "deep"]
    llm: LLMOptions = field(default_factory=LLMOptions)
    tenant: str = "default"


@dataclass(frozen=True, slots=True)
class HistoryOutcome:
    result: HistoryResult
    body: dict[str, Any]
    mode: str
    messages_before: int
    messages_after: int
    fallback_reason: str | None = None
    completion: Completion | None = None
    cache: CacheInfo = field(default_factory=CacheInfo)


class HistoryService:
    def __init__(self, compressor: HistoryCompressor, formats: Mapping[str, WireFormat],
                 settings: Settings, metrics: Metrics, gateway: LLMGateway | None,
                 handles: HandleStore | None = None, events: Emitter | None = None) -> None:
        self._handles = handles
        self._events = events
        self._compressor = compressor
        self._formats = formats
        self._settings = settings
        self._metrics = metrics
        self._gateway = gateway

    async def run(self, job: HistoryJob) -> HistoryOutcome:
        size = check_limits(job.payload, self._settings)
        wire = resolve_format(self._formats, job.format, job.payload)
        if job.mode == "deep" and self._gateway is None:
            raise LLMNotConfigured(f"mode 'deep' summarizes with an LLM, and none is "
                                   f"configured. {no_llm_hint('fast')}", pointer="/mode")
        call = Worker(offload=size > self._settings.offload_chars)
        transcript = await call(wire.parse, job.payload)
        plan = await call(self._compressor.plan, transcript, job.options)
        use_llm = self._gateway is not None and job.mode != "fast"
        mode = "deep" if use_llm else "fast"
        fallback: str | None = None
        completion: Completion | None = None
        cache = CacheInfo()
        if not plan.fired:
            result = self._compressor.unchanged(plan)
        else:
            summary: str | None = None
            if self._gateway is not None and use_llm:
                answer = await self._gateway.ask(plan.prompt, job.llm, tenant=job.tenant,
                                                 job="compress-history",
                                                 max_tokens=SUMMARY_MAX_TOKENS)
                completion, fallback, cache = answer.completion, answer.fallback_reason, \
                    answer.cache
                if completion is not None:
                    summary = completion.text
                else:
                    mode = "fast"
            if summary is None:
                summary = await call(self._compressor.fast_summary, plan)
            result = await call(self._compressor.finish, plan, summary)
        if result.compressed:
            body = await call(wire.render, result.transcript)
        else:
            body = {k: job.payload[k] for k in wire.keys if k in job.payload}
        self._record(result)
        if self._handles is not None:
            await self._handles.save_spans(job.tenant, wire, result.spans)
        if self._events is not None:
            await self._events.emit("history.compressed", job.tenant, {
                "compressed": result.compressed, "incremental": result.incremental,
                "mode": mode, "degraded": fallback is not None, "reason": result.reason,
                "stats": {"tokens_before": result.tokens_before,
                          "tokens_after": result.tokens_after}})
        return HistoryOutcome(result, body, mode, len(conversation(job.payload)[1]),
                              len(conversation(body)[1]), fallback, completion, cache)

    def _record(self, result: HistoryResult) -> None:
        m = self._metrics
        m.tokens.labels("compress-history", "in").inc(result.tokens_before)
        m.tokens.labels("compress-history", "out").inc(result.tokens_after)
        if result.tokens_before:
            m.compression.labels("compress-history").observe(
                result.tokens_after / result.tokens_before)
