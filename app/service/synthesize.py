"""Serving ``/synthesize``: format, limits, mode, LLM with fallback, the engine off the loop."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from app.engine.deep import DeepPlan
from app.engine.formats import Payload, WireFormat, resolve_format
from app.engine.modes import AutoInputs, Mode, ModeDecision, decide, decide_auto
from app.engine.phases import PhaseOptions
from app.engine.reasoning import Resolved, resolve
from app.engine.synthesis import Prepared, Synthesis, SynthesisOptions, Synthesizer
from app.engine.tiers import Tier, infer_tier
from app.events import Emitter
from app.llm.base import Completion
from app.metrics import Metrics
from app.service.handles import HandleStore
from app.service.limits import check_limits, conversation
from app.service.llm_call import Answer, CacheInfo, LLMGateway, LLMOptions
from app.service.prefix import Prefix, check_breakpoints, measure, place_breakpoints
from app.service.work import Worker
from app.settings import Settings

SUMMARY_MAX_TOKENS = 1500


@dataclass(frozen=True, slots=True)
class SynthesizeJob:
    """One request, already validated for types by the API layer."""

    payload: Payload
    format: str
    model: str | None
    tier: Tier | None
    strategy: str
    reasoning_top: Mapping[str, Any]
    reasoning_strategies: Mapping[str, Mapping[str, Any]]
    phase: PhaseOptions
    steer: bool
    task: str | None = None
    on_llm_error: Literal["fallback", "error"] = "fallback"
    tenant: str = "default"
    force_refresh: bool = False
    cache_breakpoints: bool = False


@dataclass(frozen=True, slots=True)
class SynthesizeOutcome:
    synthesis: Synthesis
    body: dict[str, Any]  # the conversation, under the keys of its wire format
    messages_before: int
    messages_after: int
    tier: Tier
    tier_source: str
    decision: ModeDecision
    requested_mode: Mode
    resolved: dict[str, Resolved]
    fallback_reason: str | None = None
    completion: Completion | None = None
    cache: CacheInfo = field(default_factory=CacheInfo)
    prefix: Prefix = field(default_factory=lambda: Prefix(0, 0, 0, 0))


class SynthesizeService:
    def __init__(
        self,
        synthesizer: Synthesizer,
        formats: Mapping[str, WireFormat],
        settings: Settings,
        metrics: Metrics,
        gateway: LLMGateway | None = None,
        handles: HandleStore | None = None,
        events: Emitter | None = None,
    ) -> None:
        self._synthesizer = synthesizer
        self._formats = formats
        self._settings = settings
        self._metrics = metrics
        self._gateway = gateway
        self._handles = handles
        self._events = events

    async def run(self, job: SynthesizeJob) -> SynthesizeOutcome:
        size = check_limits(job.payload, self._settings)
        wire = resolve_format(self._formats, job.format, job.payload)
        check_breakpoints(job.cache_breakpoints, wire.name)
        resolved = resolve(job.reasoning_top, job.reasoning_strategies, job.strategy)
        requested = Mode(resolved["synthesis"].value)
        decision = decide(requested, llm_available=self._gateway is not None)
        tier, tier_source = self._tier(job)
        strategy = resolved.get("synthesis_strategy")
        options = SynthesisOptions(
            mode=decision.mode if decision.mode in (Mode.FAST, Mode.CUSTOM, Mode.OFF)
            else Mode.FAST,
            tier=tier, phase=job.phase, steer=job.steer,
            strategy=str(strategy.value) if strategy else None, task=job.task,
        )
        call = Worker(offload=size > self._settings.offload_chars)

        transcript = await call(wire.parse, job.payload)
        prepared = await call(self._synthesizer.prepare, transcript, options)
        synthesis: Synthesis | None = None
        fallback: str | None = None
        completion: Completion | None = None
        cache = CacheInfo()
        if decision.mode in (Mode.AUTO, Mode.DEEP):
            plan = await call(self._synthesizer.plan_deep, prepared)
            decision = self._decide(decision, plan, prepared, tier, resolved)
            if decision.mode is Mode.DEEP and plan is not None:
                answer = await self._summarize(plan, resolved, job)
                completion, fallback, cache = answer.completion, answer.fallback_reason, \
                    answer.cache
                if completion is not None:
                    synthesis = await call(self._synthesizer.finish_deep, prepared, plan,
                                           completion.text)
                else:
                    reason = (fallback or "error").split(":", 1)[0]
                    decision = ModeDecision(Mode.FAST, f"deep failed ({reason}), so fast "
                                            "ran instead")
        if synthesis is None:
            synthesis = await call(self._synthesizer.compact, prepared,
                                   decision.mode if decision.mode is not Mode.DEEP
                                   else Mode.FAST)
        if synthesis.compacted or synthesis.nudged:
            body = await call(wire.render, synthesis.transcript)
        else:  # the caller's own fields, as sent
            body = {k: job.payload[k] for k in wire.keys if k in job.payload}
        prefix = await call(measure, wire, synthesis, body, self._synthesizer.tokens)
        if job.cache_breakpoints:
            body, prefix = place_breakpoints(body, prefix)
        self._record(synthesis)
        if self._handles is not None:
            await self._handles.save_spans(job.tenant, wire, synthesis.receipt.spans)
        if self._events is not None:
            s = synthesis.signals
            await self._events.emit("context.synthesized", job.tenant, {
                "tier": tier.value, "iteration": s.iteration, "max_iterations": s.max_iterations,
                "phase": synthesis.phase.value, "mode": decision.mode.value,
                "requested_mode": requested.value, "degraded": fallback is not None,
                "recent_errors": list(s.recent_errors), "tools_called": s.tools_called,
                "stats": {"tokens_before": synthesis.tokens_before,
                          "tokens_after": synthesis.tokens_after,
                          "compacted": synthesis.compacted}})
        return SynthesizeOutcome(
            synthesis, body, len(conversation(job.payload)[1]), len(conversation(body)[1]),
            tier, tier_source, decision, requested, resolved, fallback, completion, cache,
            prefix,
        )

    def _decide(self, decision: ModeDecision, plan: DeepPlan | None, prepared: Prepared,
                tier: Tier, resolved: Mapping[str, Resolved]) -> ModeDecision:
        if decision.mode is Mode.AUTO:
            dedicated = "synthesis_model" in resolved or bool(self._settings.synthesis_model)
            return decide_auto(AutoInputs(
                tier=tier, dedicated_model=dedicated,
                older_tokens=plan.older_tokens if plan is not None else 0,
                threshold=self._settings.deep_threshold_tokens, phase=prepared.phase,
                recent_errors=bool(prepared.signals.recent_errors)))
        if plan is None:
            return ModeDecision(Mode.FAST, "deep found nothing older than the recent turns "
                                "to summarize, so fast ran instead")
        return decision

    async def _summarize(self, plan: DeepPlan, resolved: Mapping[str, Resolved],
                         job: SynthesizeJob) -> Answer:
        assert self._gateway is not None
        model = resolved.get("synthesis_model")
        temperature = resolved.get("synthesis_temperature")
        provider = resolved.get("synthesis_provider")
        options = LLMOptions(
            provider=str(provider.value) if provider else None,
            model=str(model.value) if model else None,
            temperature=float(temperature.value) if temperature else None,
            on_llm_error=job.on_llm_error,
            force_refresh=job.force_refresh,
            provider_pointer=_pointer(provider, "synthesis_provider"),
        )
        return await self._gateway.ask(plan.prompt, options, tenant=job.tenant,
                                       job="synthesize", max_tokens=SUMMARY_MAX_TOKENS)

    def _tier(self, job: SynthesizeJob) -> tuple[Tier, str]:
        if job.tier is not None:
            return job.tier, "request"
        inferred = infer_tier(job.model)
        if inferred is not None:
            return inferred, "model"
        return self._settings.default_tier, "default"

    def _record(self, synthesis: Synthesis) -> None:
        m = self._metrics
        m.tokens.labels("synthesize", "in").inc(synthesis.tokens_before)
        m.tokens.labels("synthesize", "out").inc(synthesis.tokens_after)
        if synthesis.tokens_before:
            m.compression.labels("synthesize").observe(
                synthesis.tokens_after / synthesis.tokens_before)
        m.phases.labels(synthesis.phase.value).inc()


def _pointer(field: Resolved | None, name: str) -> str:
    """Where in the request a resolved reasoning field came from."""
    if field is not None and field.source.startswith("strategies."):
        strategy = field.source.removeprefix("strategies.")
        return f"/reasoning/strategies/{strategy}/{name}"
    return f"/reasoning/{name}"
