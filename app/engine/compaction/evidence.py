"""Transcript text for LLM prompts, within a character budget.

Evidence is every user and assistant text, every tool call and its result,
oldest first. Past the budget, results are cut evenly; if that is not
enough, the oldest calls shrink to one-line notes (name, key arguments,
first line of the result), so the most recent evidence survives in full.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.engine.compaction.base import StrategyContext
from app.engine.reading.outcomes import ELLIPSIS, shorten
from app.engine.transcript.model import Message, call_results

_MIN_RESULT_CHARS = 300
_TEXT_CHARS = 4_000
_ARGUMENT_CHARS = 1_000
_NOTED_TEXT_CHARS = 200
_KEEP_FULL = 3


def _lines(messages: Sequence[Message], context: StrategyContext, result_chars: int,
           noted: int) -> list[str]:
    """Evidence lines; the first ``noted`` tool calls are one-line notes."""
    pairs = call_results(messages)
    calls = {id(r): c for c, r in pairs if r is not None}
    results = {id(c): r for c, r in pairs if r is not None}
    lines: list[str] = []
    seen_calls = 0
    for m in messages:
        if m.role == "system":
            continue
        if m.role == "tool":
            if seen_calls <= noted:
                continue  # folded into its call's note
            outcome = context.outcomes.of(m)
            label = "ERROR from" if outcome.error else "RESULT of"
            call = calls.get(id(m))
            lines.append(f"{label} {call.name if call is not None else 'tool'}: "
                         f"{shorten(m.text, result_chars)}")
            continue
        if m.text.strip():
            # Inside the noted span the agent's own words shrink too; the user's never do.
            most = _NOTED_TEXT_CHARS if m.role == "assistant" and seen_calls < noted \
                else _TEXT_CHARS
            lines.append(f"{m.role.upper()}: {shorten(m.text, most)}")
        for call in m.tool_calls:
            seen_calls += 1
            if seen_calls <= noted:
                result = results.get(id(call))
                tail = ""
                if result is not None:
                    outcome = context.outcomes.of(result)
                    tail = (f" -> failed: {outcome.line}" if outcome.error
                            else f" -> {shorten(outcome.line, 120)}")
                lines.append(f"CALL {context.calls.of(call).head}{tail}")
            else:
                lines.append(f"CALL {call.name}({shorten(call.arguments, _ARGUMENT_CHARS)})")
    return lines


def render_evidence(messages: Sequence[Message], context: StrategyContext,
                    budget: int) -> tuple[str, bool]:
    results = sum(1 for m in messages if m.role == "tool")
    per_result = max(budget // max(results, 1) // 2, _MIN_RESULT_CHARS)
    # The newest calls stay in full: they are the evidence the agent had last.
    foldable = max(sum(len(m.tool_calls) for m in messages) - _KEEP_FULL, 0)
    noted = 0
    text = "\n".join(_lines(messages, context, 10**9, 0))
    if len(text) <= budget:
        return text, False
    while True:
        text = "\n".join(_lines(messages, context, per_result, noted))
        if len(text) <= budget or noted >= foldable:
            break
        noted = min(foldable, noted + max(foldable // 8, 1))
    # Last resort: keep the end, where the newest evidence is.
    return (text if len(text) <= budget
            else ELLIPSIS + text[len(text) - budget + len(ELLIPSIS) :]), True


