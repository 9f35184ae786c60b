"""``/compress-history`` as a job: when over a trigger, the older messages become one
summary block (the LLM's, or the deterministic one), updated on later calls."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from app.engine.jobs.base import (
    ConversationJob,
    ConversationRequest,
    Done,
    LLMJobMode,
    NeedsLLM,
    Plan,
    Reply,
    Report,
    degraded,
)
from app.engine.jobs.history.compressor import (
    SUMMARY_MAX_TOKENS,
    HistoryCompressor,
    HistoryOptions,
    HistoryPlan,
    HistoryResult,
)
from app.engine.jobs.summaries import check_summary
from app.engine.transcript.formats import WireFormat, conversation


@dataclass(frozen=True, slots=True)
class HistoryRequest(ConversationRequest):
    options: HistoryOptions = field(default_factory=HistoryOptions)
    mode: LLMJobMode = "auto"


@dataclass(frozen=True, slots=True)
class Compressed:
    result: HistoryResult
    body: dict[str, Any]
    messages_before: int
    messages_after: int


@dataclass(frozen=True, slots=True)
class _State:
    request: HistoryRequest
    wire: WireFormat
    plan: HistoryPlan
    use_llm: bool  # an LLM is configured and the mode allows it


class HistoryJob(ConversationJob):
    name = "compress-history"

    def __init__(self, compressor: HistoryCompressor,
                 formats: Mapping[str, WireFormat]) -> None:
        super().__init__(formats)
        self._compressor = compressor

    def plan(self, request: HistoryRequest, llm: bool) -> Plan[_State]:
        wire, transcript = self._read(request)
        use_llm = llm and request.mode != "fast"
        # Under a budget, room is kept for the longest summary the LLM may write.
        plan = self._compressor.plan(transcript, request.options,
                                     SUMMARY_MAX_TOKENS if use_llm else None)
        state = _State(request, wire, plan, use_llm)
        if request.mode == "deep" and not llm:
            return Plan(state, needs_llm=NeedsLLM(
                "mode 'deep' of /compress-history", "ask for mode 'fast'"))
        if plan.fired and state.use_llm:
            return Plan(state, plan.prompt, SUMMARY_MAX_TOKENS)
        return Plan(state)

    def finish(self, plan: Plan[_State], reply: Reply | None) -> Done[Compressed]:
        request, wire, p = plan.state.request, plan.state.wire, plan.state.plan
        compressor = self._compressor
        if not p.fired:
            result = compressor.unchanged(p)
        else:
            if reply is not None and reply.text is not None:
                check_summary(reply.text, p.span, reply.cut)
            summary = reply.text if reply is not None and reply.text is not None \
                else compressor.fast_summary(p)
            result = compressor.finish(p, summary)
        body = wire.render(result.transcript) if result.compressed \
            else self._as_sent(request, wire)
        # Under the trigger no call is made, and the mode is still the one that would run.
        mode = "deep" if plan.state.use_llm and not degraded(reply) else "fast"
        event = {
            "compressed": result.compressed, "incremental": result.incremental, "mode": mode,
            "degraded": degraded(reply), "reason": result.reason,
            "stats": {"tokens_before": result.tokens_before,
                      "tokens_after": result.tokens_after}}
        value = Compressed(result, body, len(conversation(request.payload, wire)),
                           len(conversation(body, wire)))
        return Done(value, Report(mode, result.tokens_before, result.tokens_after,
                                  result.spans, wire, result.lost,
                                  event=("history.compressed", event)))

