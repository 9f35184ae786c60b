"""``/reflect`` as a job: one iteration's tool calls read into insights, learnings and
a verdict on progress (the LLM's JSON, asked once more when it was not valid, or rules)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from app.engine.jobs.base import Done, NeedsLLM, Plan, Reply, Report, UnusableReply, degraded
from app.engine.jobs.reflect.reflector import (
    CONTEXT_TOKENS,
    Call,
    Iteration,
    PastIteration,
    Reflection,
    Reflector,
)
from app.engine.prompts import REFLECT_REPAIR, PromptMessage

REFLECT_MAX_TOKENS = 1500
ReflectMode = Literal["auto", "deep", "fast"]


@dataclass(frozen=True, slots=True)
class ReflectJobRequest:
    goal: str
    calls: tuple[Call, ...]
    history: tuple[PastIteration, ...] = ()
    mode: ReflectMode = "auto"
    iteration: int | None = None
    user_feedback: str | None = None
    context_tokens: int = CONTEXT_TOKENS

    @property
    def record(self) -> Iteration:
        return Iteration(self.goal, self.calls, self.history, self.user_feedback,
                         self.context_tokens)


class ReflectJob:
    name = "reflect"

    def __init__(self, reflector: Reflector) -> None:
        self._reflector = reflector

    def size(self, request: ReflectJobRequest) -> int:
        # Usually a handful of calls; a caller may send thousands, each read in full.
        calls = (*request.calls, *(c for past in request.history for c in past.calls))
        return len(request.goal) + len(request.user_feedback or "") + sum(
            len(c.tool) + len(c.params) + len(c.output) + len(c.rationale or "") for c in calls)

    def plan(self, request: ReflectJobRequest, llm: bool) -> Plan[ReflectJobRequest]:
        if request.mode == "deep" and not llm:
            return Plan(request, needs_llm=NeedsLLM("mode 'deep' of /reflect",
                                                    "ask for mode 'fast'"))
        if llm and request.mode != "fast":
            return Plan(request, self._reflector.prompt(request.record), REFLECT_MAX_TOKENS)
        return Plan(request)

    def finish(self, plan: Plan[ReflectJobRequest], reply: Reply | None) -> Done[Reflection]:
        r = plan.state
        reflection: Reflection | None = None
        if reply is not None and reply.text is not None:
            try:
                reflection = self._reflector.from_reply(reply.text, r.record)
            except ValueError as exc:
                raise UnusableReply(f"the reply was not valid reflection JSON: {exc}", (
                    PromptMessage("user", REFLECT_REPAIR.format(problem=exc)),)) from exc
        mode = "deep" if reflection is not None else "fast"
        if reflection is None:
            reflection = self._reflector.heuristic(r.record)
        event = {
            "iteration": r.iteration, "mode": mode, "degraded": degraded(reply),
            "progress_assessment": reflection.progress, "stuck": reflection.stuck,
            "calls": len(r.calls), "errors": sum(e.failed for e in reflection.calls)}
        return Done(reflection, Report(mode, event=("reflection.recorded", event)))
