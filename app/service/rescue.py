"""Serving ``/rescue``: evidence prompt, then one tools-free LLM call."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from app.engine.compaction import StrategyContext
from app.engine.errors import LLMNotConfigured
from app.engine.formats import Payload, WireFormat, resolve_format
from app.engine.modes import CONFIGURE_LLM
from app.engine.rescue import RescuePlan, plan
from app.engine.synthesis import EngineCaches
from app.engine.tiers import TIER_BUDGETS, Tier
from app.engine.transcript import Transcript, segment
from app.events import Emitter
from app.llm.base import Completion
from app.service.limits import check_limits
from app.service.llm_call import CacheInfo, LLMGateway, LLMOptions
from app.service.work import Worker
from app.settings import Settings


@dataclass(frozen=True, slots=True)
class RescueJob:
    payload: Payload
    format: str
    question: str
    max_steps: int | None = None
    dry_run: bool = False
    # Nothing deterministic can stand in for the answer: LLM errors always surface.
    llm: LLMOptions = field(default_factory=lambda: LLMOptions(on_llm_error="error"))
    tenant: str = "default"


@dataclass(frozen=True, slots=True)
class RescueOutcome:
    plan: RescuePlan
    completion: Completion | None
    cache: CacheInfo = field(default_factory=CacheInfo)


class RescueService:
    def __init__(self, caches: EngineCaches, formats: Mapping[str, WireFormat],
                 settings: Settings, gateway: LLMGateway | None,
                 events: Emitter | None = None) -> None:
        self._events = events
        self._caches = caches
        self._formats = formats
        self._settings = settings
        self._gateway = gateway

    def _plan(self, transcript: Transcript, job: RescueJob) -> RescuePlan:
        messages = transcript.messages
        c = self._caches
        context = StrategyContext(TIER_BUDGETS[Tier.MID], segment(messages), c.handles,
                                  c.calls, c.outcomes)
        return plan(messages, context, job.question, self._settings.rescue_evidence_chars,
                    job.max_steps)

    async def run(self, job: RescueJob) -> RescueOutcome:
        size = check_limits(job.payload, self._settings)
        wire = resolve_format(self._formats, job.format, job.payload)
        call = Worker(offload=size > self._settings.offload_chars)
        transcript = await call(wire.parse, job.payload)
        # Planning validates the transcript as every job does: a bad request is a 422
        # whether or not an LLM is configured.
        rescue = await call(self._plan, transcript, job)
        if not job.dry_run and self._gateway is None:
            raise LLMNotConfigured(f"/rescue answers with an LLM, and none is configured. "
                                   f"{CONFIGURE_LLM}; a dry run ('dry_run': true) returns the "
                                   "prompt without one.")
        if job.dry_run:
            return RescueOutcome(rescue, None)
        assert self._gateway is not None
        if self._events is not None:
            await self._events.emit("fallback.notice", job.tenant, {
                "reason": "the agent ran out of steps", "steps": rescue.steps,
                "max_steps": job.max_steps, "question": job.question[:500]})
        # No tools are offered: the answer has to come from the evidence.
        answer = await self._gateway.ask(rescue.prompt, job.llm, tenant=job.tenant,
                                         job="rescue",
                                         max_tokens=self._settings.rescue_max_tokens)
        if self._events is not None and answer.completion is not None:
            await self._events.emit("rescue.completed", job.tenant, {
                "steps": rescue.steps, "evidence_chars": rescue.evidence_chars,
                "compacted": rescue.compacted, "model": answer.completion.model,
                "answer_chars": len(answer.completion.text), "cache_hit": answer.cache.hit})
        return RescueOutcome(rescue, answer.completion, answer.cache)
