"""``/synthesize`` as a job: read the phase, choose the mode, compact (or summarize the
older turns with the LLM's reply), render, and say where the stable prefix ends."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from app.engine.compaction.deep import DeepPlan
from app.engine.compaction.tiers import Tier, infer_tier
from app.engine.jobs.base import (
    ConversationJob,
    ConversationRequest,
    Done,
    NeedsLLM,
    Plan,
    Reply,
    Report,
    Resume,
    degraded,
)
from app.engine.jobs.history.windows import context_window
from app.engine.jobs.summaries import check_summary
from app.engine.jobs.synthesize.budget import Budget
from app.engine.jobs.synthesize.modes import AutoInputs, Mode, ModeDecision, decide, decide_auto
from app.engine.jobs.synthesize.prefix import Prefix, check_breakpoints, measure, place_breakpoints
from app.engine.jobs.synthesize.reasoning import Bundle, ResolvedReasoning, resolve
from app.engine.jobs.synthesize.synthesizer import (
    Prepared,
    Synthesis,
    SynthesisOptions,
    Synthesizer,
    under_trigger,
)
from app.engine.reading.phases import PhaseOptions
from app.engine.transcript.formats import WireFormat, conversation

SUMMARY_MAX_TOKENS = 1500
# Modes the engine runs without an LLM; auto and deep are decided before.
_DIRECT = (Mode.FAST, Mode.CUSTOM, Mode.OFF)


@dataclass(frozen=True, slots=True)
class SynthesisDefaults:
    """What the operator's settings say of every synthesis (see
    ``service.jobs.synthesis_defaults``, the one place they are read): the tier when
    neither the request nor its model names one, and what auto weighs: a synthesis
    model of the operator's, and the size of the older part above which deep is worth
    its call."""

    tier: Tier = Tier.MID
    dedicated_model: bool = False
    deep_threshold_tokens: int = 4000
    # Without a budget in the request, the output is capped at this share of the model's
    # window, for models whose window is known; None: no cap.
    budget_share: float | None = None


@dataclass(frozen=True, slots=True)
class SynthesizeJobRequest(ConversationRequest):
    model: str | None = None
    tier: Tier | None = None
    # The reasoning config resolved for the agent's strategy (see ``reasoning.resolve``).
    resolved: ResolvedReasoning = field(default_factory=lambda: resolve(Bundle(), {}, "reactive"))
    phase: PhaseOptions = field(default_factory=PhaseOptions)
    steer: bool = True
    task: str | None = None
    cache_breakpoints: bool = False
    defaults: SynthesisDefaults = field(default_factory=SynthesisDefaults)
    budget: Budget | None = None


@dataclass(frozen=True, slots=True)
class Synthesized:
    synthesis: Synthesis
    body: dict[str, Any]  # the conversation, under the keys of its wire format
    messages_before: int
    messages_after: int
    tier: Tier
    tier_source: str
    decision: ModeDecision
    requested_mode: Mode
    resolved: ResolvedReasoning
    prefix: Prefix


@dataclass(frozen=True, slots=True)
class _State:
    request: SynthesizeJobRequest
    wire: WireFormat
    prepared: Prepared
    decision: ModeDecision
    requested: Mode
    resolved: ResolvedReasoning
    tier: Tier
    tier_source: str
    deep: DeepPlan | None = None


class SynthesizeJob(ConversationJob):
    name = "synthesize"

    def __init__(self, synthesizer: Synthesizer, formats: Mapping[str, WireFormat]) -> None:
        super().__init__(formats)
        self._synthesizer = synthesizer

    def plan(self, request: SynthesizeJobRequest, llm: bool) -> Plan[_State]:
        wire, transcript = self._read(request)
        check_breakpoints(request.cache_breakpoints, wire.name)
        resolved = request.resolved
        requested = resolved.synthesis.value
        needs = None if llm or requested is not Mode.DEEP else NeedsLLM(
            "mode 'deep' of /synthesize", "ask for mode 'fast', 'custom' or 'off'",
            "/reasoning/synthesis")
        decision = decide(requested, llm_available=llm)
        tier, tier_source = _tier(request)
        strategy = resolved.synthesis_strategy
        options = SynthesisOptions(
            mode=decision.mode if decision.mode in _DIRECT else Mode.FAST, tier=tier,
            phase=request.phase, steer=request.steer,
            strategy=strategy.value if strategy else None, task=request.task,
            budget=_budget(request))
        prepared = self._synthesizer.prepare(transcript, options)
        state = _State(request, wire, prepared, decision, requested, resolved, tier,
                       tier_source)
        if under_trigger(prepared):  # goes back as it came: nothing to ask a model
            return Plan(state)
        if needs is not None or decision.mode not in (Mode.AUTO, Mode.DEEP):
            return Plan(state, needs_llm=needs)
        deep = self._synthesizer.plan_deep(prepared)
        decision = self._choose(state, deep)
        state = replace(state, decision=decision, deep=deep)
        if decision.mode is not Mode.DEEP or deep is None:
            return Plan(state)
        return Plan(state, deep.prompt, SUMMARY_MAX_TOKENS,
                    resume=Resume(deep.prefixes, partial(self._resumed, state, deep)))

    def _resumed(self, state: _State, deep: DeepPlan, turns: int, summary: str,
                 ) -> Plan[_State]:
        """The plan that updates ``summary``, of the first ``turns`` older turns, with the
        older turns after them: what an earlier call summarized is not sent again."""
        deep = self._synthesizer.resume_deep(state.prepared, deep, turns, summary)
        return Plan(replace(state, deep=deep), deep.prompt, SUMMARY_MAX_TOKENS)

    def _choose(self, state: _State, deep: DeepPlan | None) -> ModeDecision:
        """auto's choice once the transcript is read; deep with nothing to summarize
        runs fast."""
        if state.decision.mode is Mode.AUTO:
            request = state.request
            prepared = state.prepared
            return decide_auto(AutoInputs(
                tier=state.tier,
                dedicated_model=state.resolved.synthesis_model is not None
                or request.defaults.dedicated_model,
                older_tokens=deep.older_tokens if deep is not None else 0,
                threshold=request.defaults.deep_threshold_tokens, phase=prepared.phase,
                recent_errors=bool(prepared.signals.recent_errors)))
        if deep is None:
            return ModeDecision(Mode.FAST, "deep found nothing older than the recent turns "
                                "to summarize, so fast ran instead")
        return state.decision

    def finish(self, plan: Plan[_State], reply: Reply | None) -> Done[Synthesized]:
        state = plan.state
        decision = state.decision
        synthesizer = self._synthesizer
        if reply is not None and reply.text is not None and state.deep is not None:
            older = state.prepared.lifted.messages[state.deep.start : state.deep.stop]
            check_summary(reply.text, older, reply.cut)
            synthesis = synthesizer.finish_deep(state.prepared, state.deep, reply.text)
        else:
            if reply is not None:
                reason = (reply.failure or "error").split(":", 1)[0]
                decision = ModeDecision(Mode.FAST, f"deep failed ({reason}), so fast ran "
                                        "instead")
            synthesis = synthesizer.compact(
                state.prepared, decision.mode if decision.mode is not Mode.DEEP else Mode.FAST)
        request, wire = state.request, state.wire
        body = wire.render(synthesis.transcript) if synthesis.compacted or synthesis.nudged \
            else self._as_sent(request, wire)
        prefix = measure(wire, synthesis, body, synthesizer.tokens)
        if request.cache_breakpoints:
            body, prefix = place_breakpoints(body, prefix)
        s = synthesis.signals
        event = {
            "tier": state.tier.value, "iteration": s.iteration,
            "max_iterations": s.max_iterations, "phase": synthesis.phase.value,
            "mode": decision.mode.value, "requested_mode": state.requested.value,
            "degraded": degraded(reply),
            "recent_errors": list(s.recent_errors), "tools_called": s.tools_called,
            "stats": {"tokens_before": synthesis.tokens_before,
                      "tokens_after": synthesis.tokens_after,
                      "compacted": synthesis.compacted}}
        value = Synthesized(
            synthesis, body, len(conversation(request.payload, wire)),
            len(conversation(body, wire)), state.tier, state.tier_source, decision,
            state.requested, state.resolved, prefix)
        return Done(value, Report(
            decision.mode.value, synthesis.tokens_before, synthesis.tokens_after,
            synthesis.receipt.spans, wire, synthesis.receipt.lost,
            event=("context.synthesized", event),
            phase=synthesis.phase.value))


def _budget(request: SynthesizeJobRequest) -> Budget | None:
    """The request's budget, else the settings' share of the model's window when the
    window is known."""
    given = request.budget
    if given is not None and given.tokens is not None:
        return given
    trigger = given.trigger if given is not None else None
    share = request.defaults.budget_share
    window = context_window(request.model)
    if share is None or window is None:
        return given
    return Budget(max(1, int(window * share)), trigger, fill=False)


def _tier(request: SynthesizeJobRequest) -> tuple[Tier, str]:
    if request.tier is not None:
        return request.tier, "request"
    inferred = infer_tier(request.model)
    if inferred is not None:
        return inferred, "model"
    return request.defaults.tier, "default"
