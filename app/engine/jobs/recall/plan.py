"""``/summarize-recall`` as a job: the best memories for a query, then one cited
answer from them (the LLM's, checked, or extractive sentences)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from app.engine.jobs.base import Done, NeedsLLM, Plan, Reply, Report, UnusableReply, degraded
from app.engine.jobs.recall.answer import (
    Memory,
    RecallAnswer,
    check,
    cites,
    extractive,
    is_refusal,
    prompt,
    select,
)
from app.engine.transcript.tokens import TokenCounter

# The extractive answer's length: the token budget at about four characters a token.
_CHARS_PER_TOKEN = 4
RecallMode = Literal["auto", "deep", "extractive"]


@dataclass(frozen=True, slots=True)
class RecallRequest:
    query: str
    memories: tuple[Memory, ...]
    k: int = 10
    max_tokens: int = 500
    mode: RecallMode = "auto"


@dataclass(frozen=True, slots=True)
class Recalled:
    answer: RecallAnswer
    chosen: tuple[Memory, ...]


@dataclass(frozen=True, slots=True)
class _State:
    request: RecallRequest
    chosen: tuple[Memory, ...]


class RecallJob:
    name = "summarize-recall"

    def __init__(self, counter: TokenCounter) -> None:
        self._counter = counter

    def size(self, request: RecallRequest) -> int:
        # Selection reads every memory: a large one must not stall the event loop.
        return len(request.query) + sum(len(m.text) for m in request.memories)

    def plan(self, request: RecallRequest, llm: bool) -> Plan[_State]:
        chosen = tuple(select(request.memories, request.query, request.k))
        state = _State(request, chosen)
        if request.mode == "deep" and not llm:
            return Plan(state, needs_llm=NeedsLLM("mode 'deep' of /summarize-recall",
                                                  "ask for mode 'extractive'"))
        if llm and request.mode != "extractive":
            return Plan(state, prompt(request.query, chosen), request.max_tokens)
        return Plan(state)

    def finish(self, plan: Plan[_State], reply: Reply | None) -> Done[Recalled]:
        request, chosen = plan.state.request, plan.state.chosen
        answer: RecallAnswer | None = None
        if reply is not None and reply.text is not None:
            if not (cites(reply.text) or is_refusal(reply.text)):
                # "ok", an apology, a greeting: no claim, no citation, no refusal. It is no
                # answer, so it is neither cached nor served; the extractive one is.
                raise UnusableReply("the answer cites none of the memories and is no "
                                    "'INSUFFICIENT:' refusal")
            answer = check(reply.text, chosen)
        mode = "deep" if answer is not None else "extractive"
        if answer is None:
            answer = extractive(request.query, chosen, request.max_tokens * _CHARS_PER_TOKEN)
        # Recall compresses too: the chosen memories in, one answer out.
        tokens_in = sum(self._counter.text(m.text) for m in chosen)
        event = {
            "mode": mode, "degraded": degraded(reply), "memories_given": len(request.memories),
            "memories_chosen": len(chosen),
            "sources_used": [c.memory.id for c in answer.citations],
            "refused": answer.refused, "removed_citations": list(answer.removed_citations),
            "removed_claims": len(answer.removed_claims),
            "flagged_claims": len(answer.flagged_claims),
            "cache_hit": reply is not None and reply.cache_hit}
        return Done(Recalled(answer, chosen), Report(
            mode, tokens_in, self._counter.text(answer.summary),
            event=("recall.summarized", event)))
