"""The ``deep`` mode's pure halves: the prompt for the older turns, and the result.

The service calls the LLM between them, so the engine never does I/O. The
summary replaces the older assistant and tool messages and follows the older
user and system messages, which stay in their order; recent turns stay verbatim.

The older part grows at its end from step to step. Each prefix of it that ends at a
turn boundary has a name (a digest of its messages and the task), so that a summary an
earlier call made of a prefix, which the service keeps in its cache by that name, can
be updated with only the turns after it (``resumed``) instead of the whole older part
being sent again.
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
    DEEP_UPDATE,
    DEEP_USER,
    SUMMARY_HEADER,
    PromptMessage,
    counted,
    fence,
)
from app.engine.reading.outcomes import shorten
from app.engine.transcript.model import Message, Part, Turn, call_results

# The older part is sent within this many characters (about 15k tokens).
PROMPT_CHARS = 60_000


@dataclass(frozen=True, slots=True)
class DeepPlan:
    prompt: tuple[PromptMessage, ...]
    start: int  # the older region: messages[start:stop]
    stop: int
    older_tokens: int
    # Where each older turn ends, and the name of the prefix of the conversation that
    # ends there (see ``prefix_names``): the last is the prefix this plan's summary covers.
    ends: tuple[int, ...] = ()
    prefixes: tuple[str, ...] = ()


def plan(messages: Sequence[Message], context: StrategyContext, task: str,
         older_tokens: int) -> DeepPlan | None:
    older, _ = older_and_recent(messages, context)
    if not older:
        return None
    start, stop = older[0].start, older[-1].stop
    text, _ = render_evidence(messages[start:stop], context, PROMPT_CHARS)
    prompt = (PromptMessage("system", DEEP_SYSTEM),
              PromptMessage("user", DEEP_USER.format(task=_task(task),
                                                    transcript=fence(text))))
    return DeepPlan(prompt, start, stop, older_tokens, tuple(t.stop for t in older),
                    prefix_names(messages, older, task, context))


def resumed(messages: Sequence[Message], context: StrategyContext, task: str,
            deep: DeepPlan, turns: int, summary: str) -> DeepPlan:
    """``deep`` asking the model to update ``summary``, an earlier summary of the prefix
    through the first ``turns`` older turns, with only the older turns after it."""
    since = deep.ends[turns - 1]
    text, _ = render_evidence(messages[since : deep.stop], context, PROMPT_CHARS)
    # The earlier summary is the model's reading of untrusted text: fenced as data too.
    user = DEEP_UPDATE.format(task=_task(task), summary=fence(summary.strip()),
                              transcript=fence(text))
    prompt = (PromptMessage("system", DEEP_SYSTEM), PromptMessage("user", user))
    return DeepPlan(prompt, deep.start, deep.stop, deep.older_tokens, deep.ends,
                    deep.prefixes)


def prefix_names(messages: Sequence[Message], older: Sequence[Turn], task: str,
                 context: StrategyContext) -> tuple[str, ...]:
    """A name for each prefix of the conversation that ends where an older turn ends:
    the same messages and task give the same name on any replica, and any change
    before the end another."""
    handles = context.handles
    h = handles.start()
    h.update(task.encode("utf-8", "surrogatepass") + b"\0")
    names: list[str] = []
    done = 0
    for turn in older:
        handles.feed(h, messages[done : turn.stop])
        done = turn.stop
        names.append(handles.name(h))
    return tuple(names)


def _task(task: str) -> str:
    return fence(shorten(task, 4_000), "task")


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
