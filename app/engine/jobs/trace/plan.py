"""``/summarize-trace`` as a job: past a trigger, older actions become one line per tool
(the LLM's lines where they keep what the deterministic ones keep), recent ones stay."""

from __future__ import annotations

from dataclasses import dataclass, field

from app.engine.compaction.base import Span
from app.engine.jobs.base import (
    Done,
    LLMJobMode,
    NeedsLLM,
    Plan,
    Reply,
    Report,
    UnusableReply,
    degraded,
)
from app.engine.jobs.trace.summarizer import (
    Action,
    TraceOptions,
    TracePlan,
    TraceResult,
    TraceSummarizer,
    read_scratchpad,
)

TRACE_MAX_TOKENS = 1000


@dataclass(frozen=True, slots=True)
class TraceRequest:
    actions: tuple[Action, ...] | None = None  # or the scratchpad
    scratchpad: str | None = None
    options: TraceOptions = field(default_factory=TraceOptions)
    mode: LLMJobMode = "auto"


@dataclass(frozen=True, slots=True)
class Summarized:
    result: TraceResult
    actions_total: int


class TraceJob:
    name = "summarize-trace"

    def __init__(self, summarizer: TraceSummarizer) -> None:
        self._summarizer = summarizer

    def size(self, request: TraceRequest) -> int:
        return len(request.scratchpad or "") + sum(len(a.observation)
                                                   for a in request.actions or ())

    def plan(self, request: TraceRequest, llm: bool) -> Plan[TracePlan]:
        if request.actions is not None:
            plan = self._summarizer.plan(request.actions, request.options)
        else:
            pad = read_scratchpad(request.scratchpad or "")
            plan = self._summarizer.plan(pad.actions, request.options, (pad.head, pad.tail))
        if request.mode == "deep" and not llm:
            return Plan(plan, needs_llm=NeedsLLM(
                "mode 'deep' of /summarize-trace", "ask for mode 'fast'"))
        if plan.fired and llm and request.mode != "fast" and plan.llm_worth_it:
            return Plan(plan, plan.prompt, TRACE_MAX_TOKENS)
        return Plan(plan)

    def finish(self, plan: Plan[TracePlan], reply: Reply | None) -> Done[Summarized]:
        p = plan.state
        groups = p.groups if p.fired else None
        strategy = "deterministic"
        if reply is not None and reply.text is not None:
            from_llm, why = self._summarizer.llm_groups(p, reply.text)
            if from_llm is None:
                raise UnusableReply(f"no line of the reply keeps what its group's line "
                                    f"keeps ({why})")
            groups, strategy = from_llm, "llm"
        result = self._summarizer.finish(p, groups, strategy)
        mode = "deep" if strategy == "llm" else "fast"
        documents = () if result.handle is None else ((result.handle, {
            "format": "trace", "kind": result.strategy,
            "actions": [action_dict(a) for a in result.summarized]}),)
        event = {
            "strategy": result.strategy, "mode": mode, "degraded": degraded(reply),
            "actions_total": len(p.actions), "actions_kept": len(result.recent),
            "stats": {"tokens_before": result.tokens_before,
                      "tokens_after": result.tokens_after}}
        return Done(Summarized(result, len(p.actions)), Report(
            mode, result.tokens_before, result.tokens_after, _spans(result), lost=result.lost,
            documents=documents, event=("trace.summarized", event)))


def _spans(r: TraceResult) -> tuple[Span, ...]:
    """The older actions, when replaced, as one span /expand gives back."""
    if r.handle is None:
        return ()
    tools = tuple(dict.fromkeys(a.action for a in r.summarized))
    kind = "truncated" if r.strategy == "truncation" else "summarized"
    return (Span(r.handle, kind, 0, len(r.summarized) - 1, len(r.summarized), tools),)


def action_dict(action: Action) -> dict[str, str | None]:
    return {"action": action.action, "action_input": action.action_input,
            "observation": action.observation, "outcome": action.outcome,
            "thought": action.thought}
