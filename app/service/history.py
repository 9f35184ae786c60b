"""Serving ``/compress-history``: trigger, summary (LLM or deterministic), fallback."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from app.engine.errors import LLMNotConfigured
from app.engine.formats import Payload, WireFormat, resolve_format
from app.engine.history import HistoryCompressor, HistoryOptions, HistoryResult
from app.engine.modes import NO_LLM_HINT
from app.llm.base import Completion, CompletionRequest, LLMError
from app.llm.client import LLMClient
from app.metrics import Metrics
from app.service.limits import check_limits, conversation
from app.service.work import Worker
from app.settings import Settings

SUMMARY_MAX_TOKENS = 2000


@dataclass(frozen=True, slots=True)
class HistoryJob:
    payload: Payload
    format: str
    options: HistoryOptions
    mode: Literal["auto", "fast", "deep"]
    provider: str | None = None
    model: str | None = None
    temperature: float = 0.2
    on_llm_error: Literal["fallback", "error"] = "fallback"


@dataclass(frozen=True, slots=True)
class HistoryOutcome:
    result: HistoryResult
    body: dict[str, Any]
    mode: str
    messages_before: int
    messages_after: int
    fallback_reason: str | None = None
    completion: Completion | None = None


class HistoryService:
    def __init__(self, compressor: HistoryCompressor, formats: Mapping[str, WireFormat],
                 settings: Settings, metrics: Metrics, llm: LLMClient | None) -> None:
        self._compressor = compressor
        self._formats = formats
        self._settings = settings
        self._metrics = metrics
        self._llm = llm if llm is not None and llm.available else None

    async def run(self, job: HistoryJob) -> HistoryOutcome:
        size = check_limits(job.payload, self._settings)
        wire = resolve_format(self._formats, job.format, job.payload)
        if job.mode == "deep" and self._llm is None:
            raise LLMNotConfigured(f"mode 'deep' summarizes with an LLM, and none is "
                                   f"configured. {NO_LLM_HINT}", pointer="/mode")
        call = Worker(offload=size > self._settings.offload_chars)
        transcript = await call(wire.parse, job.payload)
        plan = await call(self._compressor.plan, transcript, job.options)
        use_llm = self._llm is not None and job.mode != "fast"
        mode = "deep" if use_llm else "fast"
        fallback: str | None = None
        completion: Completion | None = None
        if not plan.fired:
            result = self._compressor.unchanged(plan)
        else:
            summary: str | None = None
            if use_llm:
                try:
                    completion = await self._summarize(plan.prompt, job)
                    summary = completion.text
                except LLMError as exc:
                    if job.on_llm_error == "error":
                        raise
                    self._metrics.fallbacks.labels(exc.reason).inc()
                    fallback, mode = f"{exc.reason}: {exc.detail}", "fast"
            if summary is None:
                summary = await call(self._compressor.fast_summary, plan)
            result = await call(self._compressor.finish, plan, summary)
        if result.compressed:
            body = await call(wire.render, result.transcript)
        else:
            body = {k: job.payload[k] for k in wire.keys if k in job.payload}
        self._record(result)
        return HistoryOutcome(result, body, mode, len(conversation(job.payload)[1]),
                              len(conversation(body)[1]), fallback, completion)

    async def _summarize(self, prompt: Any, job: HistoryJob) -> Completion:
        assert self._llm is not None
        request = CompletionRequest(prompt, model=job.model or self._settings.synthesis_model,
                                    temperature=job.temperature,
                                    max_tokens=SUMMARY_MAX_TOKENS)
        return await self._llm.complete(request, job.provider)

    def _record(self, result: HistoryResult) -> None:
        m = self._metrics
        m.tokens.labels("compress-history", "in").inc(result.tokens_before)
        m.tokens.labels("compress-history", "out").inc(result.tokens_after)
        if result.tokens_before:
            m.compression.labels("compress-history").observe(
                result.tokens_after / result.tokens_before)
