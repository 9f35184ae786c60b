"""``/rescue`` as a job: the evidence of an agent that ran out of steps, as one
tools-free prompt, and the LLM's answer to the user's question."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from app.engine.jobs.base import (
    ConversationJob,
    ConversationRequest,
    Done,
    NeedsLLM,
    Plan,
    Reply,
    Report,
    UnusableReply,
)
from app.engine.jobs.caches import EngineCaches
from app.engine.jobs.rescue.answer import from_evidence, ungrounded
from app.engine.jobs.rescue.prompt import RescuePlan, TokenBudget, plan
from app.engine.transcript.formats import WireFormat
from app.engine.transcript.tokens import TokenCounter

# The quoted answer's length: the answer's token budget at about four characters a token.
_CHARS_PER_TOKEN = 4


@dataclass(frozen=True, slots=True)
class RescueJobRequest(ConversationRequest):
    question: str = ""
    max_steps: int | None = None
    dry_run: bool = False
    evidence_chars: int = 24_000
    max_tokens: int = 800
    budget_tokens: int | None = None  # the prompt's tokens, at most


@dataclass(frozen=True, slots=True)
class Rescued:
    plan: RescuePlan
    answer: str | None  # None on a dry run
    degraded_reason: str | None = None  # why the answer does not stand as one


class RescueJob(ConversationJob):
    name = "rescue"

    def __init__(self, caches: EngineCaches, formats: Mapping[str, WireFormat],
                 counter: TokenCounter) -> None:
        super().__init__(formats)
        self._caches = caches
        self._counter = counter

    def plan(self, request: RescueJobRequest, llm: bool) -> Plan[RescuePlan]:
        messages = self._read(request)[1].messages
        # Planning validates the transcript as every job does: a bad request is a 422
        # whether or not an LLM is configured.
        token_budget = None if request.budget_tokens is None else TokenBudget(
            request.budget_tokens, self._counter.text)
        rescue = plan(messages, self._caches.context(messages), request.question,
                      request.evidence_chars, request.max_steps, token_budget)
        if request.dry_run:
            return Plan(rescue)
        if not llm:
            return Plan(rescue, needs_llm=NeedsLLM(
                "/rescue (it answers with an LLM)",
                "send 'dry_run': true for the prompt alone", pointer=None))
        notice = {"reason": "the agent ran out of steps", "steps": rescue.steps,
                  "max_steps": request.max_steps, "question": request.question[:500]}
        return Plan(rescue, rescue.prompt, request.max_tokens,
                    notices=(("fallback.notice", notice),))

    def finish(self, plan: Plan[RescuePlan], reply: Reply | None) -> Done[Rescued]:
        rescue = plan.state
        if reply is None:
            return Done(Rescued(rescue, None), Report("dry_run"))
        if reply.text is None:
            # The call failed, or its reply was no answer: the evidence answers, quoted.
            answer = from_evidence(rescue.question, rescue.evidence,
                                   plan.max_tokens * _CHARS_PER_TOKEN)
            reason = f"{reply.failure or 'the call failed'}; the answer quotes the evidence"
            return Done(Rescued(rescue, answer, reason),
                        Report("evidence", event=("rescue.completed", self._event(
                            rescue, reply, answer, reason))))
        unusable = ungrounded(reply.text, rescue.evidence)
        if unusable is not None:
            raise UnusableReply(unusable)
        return Done(Rescued(rescue, reply.text),
                    Report("llm", event=("rescue.completed", self._event(
                        rescue, reply, reply.text, None))))

    @staticmethod
    def _event(rescue: RescuePlan, reply: Reply, answer: str,
               reason: str | None) -> dict[str, object]:
        return {"steps": rescue.steps, "evidence_chars": rescue.evidence_chars,
                "compacted": rescue.compacted, "model": reply.model,
                "answer_chars": len(answer), "cache_hit": reply.cache_hit,
                "degraded": reason is not None}
