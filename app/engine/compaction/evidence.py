"""Transcript text for LLM prompts, within a character budget.

Evidence is every user and assistant text, every tool call and its result,
oldest first. Past the budget it is filled newest first: each step (a message
with the results of its calls) goes in whole while it fits, else with its results
cut to the room there is (their beginnings and their ends, where a test run's
verdict is), else as one-line notes of its calls (name, key arguments, first line
of the result), and the task stays first. Cutting every result evenly had cut the
final test output and the patch, the evidence a rescue most needs, to a few
hundred characters; a newest step larger than the budget had become one line.
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
_MARKER_ROOM = 40


def _ends(text: str, limit: int) -> str:
    """Its beginning and its end, ``limit`` characters in all, about."""
    if len(text) <= limit:
        return text
    tail = limit // 3
    cut = len(text) - limit
    return f"{text[: limit - tail]}\n{ELLIPSIS}[{cut} chars cut]{ELLIPSIS}\n{text[-tail:]}"


def _lines(messages: Sequence[Message], context: StrategyContext, result_chars: int,
           noted: int, *, ends: bool = False) -> list[str]:
    """Evidence lines; the first ``noted`` tool calls are one-line notes; ``ends``: a
    result past ``result_chars`` keeps its beginning and its end, not its beginning."""
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
            shown = _ends(m.text, result_chars) if ends else shorten(m.text, result_chars)
            lines.append(f"{label} {call.name if call is not None else 'tool'}: {shown}")
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
    text = "\n".join(_lines(messages, context, 10**9, 0))
    if len(text) <= budget:
        return text, False
    steps = _steps(messages)
    first = steps[0] if steps and steps[0][0].role == "user" else []
    head = "\n".join(_lines(first, context, _MIN_RESULT_CHARS, 0)) if first else ""
    # The line that says how many older steps were left out has its room kept.
    used = (len(head) + 1 if head else 0) + _MARKER_ROOM
    taken: list[str] = []  # newest first
    left_out = 0
    older = steps[1:] if first else steps
    for k, step in enumerate(reversed(older)):
        calls = sum(len(m.tool_calls) for m in step)
        noted = "\n".join(_lines(step, context, _MIN_RESULT_CHARS, calls))
        # Cut, a step leaves the older steps room for their notes, up to half the room.
        rest = older[: len(older) - k - 1]
        reserve = min((budget - used) // 2, sum(
            len("\n".join(_lines(s, context, _MIN_RESULT_CHARS, 1 << 30))) + 1
            for s in rest)) if calls else 0
        forms = ("\n".join(_lines(step, context, 10**9, 0)),
                 _cut_to(step, context, budget - used - 1 - reserve), noted)
        fit = next((f for f in forms if f and used + len(f) + 1 <= budget), None)
        if fit is None:
            left_out = len(older) - len(taken)
            break
        taken.append(fit)
        used += len(fit) + 1
    parts = [head] if head else []
    if left_out:
        parts.append(f"({left_out} older steps left out)")
    parts += reversed(taken)
    text = "\n".join(parts)
    # Last resort (a single step past the budget): keep the end, the newest evidence.
    return (text if len(text) <= budget
            else ELLIPSIS + text[len(text) - budget + len(ELLIPSIS) :]), True


def _cut_to(step: Sequence[Message], context: StrategyContext, room: int) -> str:
    """The step with its results cut to their beginnings and ends so that it takes at
    most ``room`` characters; "" when even results of the shortest cut do not fit."""
    low, high, best = _MIN_RESULT_CHARS, max(_MIN_RESULT_CHARS, room), ""
    while low <= high:  # the longest cut that fits
        middle = (low + high) // 2
        text = "\n".join(_lines(step, context, middle, 0, ends=True))
        if len(text) <= room:
            best, low = text, middle + 1
        else:
            high = middle - 1
    return best


def _steps(messages: Sequence[Message]) -> list[list[Message]]:
    """Messages in steps: each message with the tool results that follow it."""
    steps: list[list[Message]] = []
    for m in messages:
        if m.role == "system":
            continue
        if m.role == "tool" and steps:
            steps[-1].append(m)
        else:
            steps.append([m])
    return steps
