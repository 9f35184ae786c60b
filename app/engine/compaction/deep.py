"""The ``deep`` mode's pure halves: the prompt for the older turns, and the result.

The service calls the LLM between them, so the engine never does I/O. The
summary replaces the older assistant and tool messages and follows the older
user and system messages, which stay in their order; recent turns stay verbatim.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.engine.compaction.base import Compaction, Span, StrategyContext, span_of
from app.engine.compaction.evidence import render_evidence
from app.engine.compaction.ledger import build_ledger
from app.engine.compaction.notes import render_ledger
from app.engine.compaction.rebuild import older_and_recent
from app.engine.prompts import (
    DEEP_SYSTEM,
    DEEP_USER,
    SUMMARY_HEADER,
    PromptMessage,
    counted,
    fence,
)
from app.engine.reading.outcomes import shorten
from app.engine.transcript.model import Message, Part, call_results

# The older part is sent within this many characters (about 15k tokens).
PROMPT_CHARS = 60_000


@dataclass(frozen=True, slots=True)
class DeepPlan:
    prompt: tuple[PromptMessage, ...]
    start: int  # the older region: messages[start:stop]
    stop: int
    older_tokens: int


def plan(messages: Sequence[Message], context: StrategyContext, task: str,
         older_tokens: int) -> DeepPlan | None:
    older, _ = older_and_recent(messages, context)
    if not older:
        return None
    start, stop = older[0].start, older[-1].stop
    text, _ = render_evidence(messages[start:stop], context, PROMPT_CHARS)
    prompt = (PromptMessage("system", DEEP_SYSTEM),
              PromptMessage("user", DEEP_USER.format(task=fence(shorten(task, 4_000), "task"),
                                                    transcript=fence(text))))
    return DeepPlan(prompt, start, stop, older_tokens)


def summarized(messages: Sequence[Message], context: StrategyContext, deep: DeepPlan,
               summary: str) -> Compaction:
    region = messages[deep.start : deep.stop]
    work = [m for m in region if m.role in ("assistant", "tool")]
    span = span_of("summarized", work, context.handles)
    calls = sum(len(m.tool_calls) for m in work)
    replies = sum(1 for m in work if m.role == "assistant" and not m.tool_calls)
    lines = [SUMMARY_HEADER.format(what=counted(calls, replies), handle=span.handle),
             summary.strip()]
    ledger = build_ledger(call_results(region), context.calls, context.outcomes)
    if ledger:
        lines.append(render_ledger(ledger))
    note = Message("user", tuple(Part("text", line) for line in lines))
    kept = [m for m in region if m.role not in ("assistant", "tool")]
    # The note goes after the region's user messages: put before them, it would show
    # work the user asked for later as done before they asked.
    out = [*messages[: deep.start], *kept, note, *messages[deep.stop :]]
    spans: tuple[Span, ...] = (span,)
    return Compaction(tuple(out), spans, tuple(work), len(work))
