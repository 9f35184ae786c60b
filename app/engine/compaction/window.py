"""The ``window`` strategy: what ``fast`` falls back to on a run whose shape it did not
read (see ``reading.confidence``): the recent turns as they came, the older ones out
whole behind one handle, as a keep-last window would send them, so a run the engine
cannot read is never served worse than by a window.

People's words in the older part stay (short user messages, system messages); the long
user messages that came back after the agent's turns, unread harness output for all the
engine knows, go with the turns. The cut moves by whole steps of turns, so the output
changes once a step and only grows at its end in between: a provider's cache keeps it.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.engine.compaction.base import Compaction, StrategyContext, span_of
from app.engine.prompts import WINDOW_NOTE
from app.engine.reading.confidence import LONG_CHARS
from app.engine.reading.textactions import asks_user
from app.engine.transcript.model import Message, text_message

# Recent turns kept whole, at least, as multiples of the tier's full turns; the cut moves
# by as many turns at a time.
_TURNS_PER_FULL_TURN = 2
_LEAST_TURNS = 4


class WindowStrategy:
    name = "window"

    def compact(self, messages: Sequence[Message], context: StrategyContext) -> Compaction:
        segments = context.segments
        turns = segments.turns
        step = max(_LEAST_TURNS, _TURNS_PER_FULL_TURN * context.budget.full_turns)
        out_turns = ((len(turns) - step) // step) * step
        if out_turns <= 0:
            return Compaction(tuple(messages))
        head = list(messages[: segments.head_stop])
        cut_at = turns[out_turns].start
        older = messages[segments.head_stop : cut_at]
        # The user's answers to the agent's questions are theirs however long the
        # harness made them (a harness may append a block of its own, environment details, to each).
        asked = {id(messages[i]) for i in range(max(segments.head_stop, 1), cut_at)
                 if asks_user(messages[i - 1])}
        words = [m for m in older if m.role == "system"
                 or (m.role == "user" and (_short_words(m) or id(m) in asked))]
        kept = {id(m) for m in words}
        gone = [m for m in older if id(m) not in kept]
        if not gone:
            return Compaction(tuple(messages))
        span = span_of("compacted", gone, context.handles)
        note = text_message("user", WINDOW_NOTE.format(
            n=len(gone), what=_what(gone), handle=span.handle))
        out = (*head, note, *words, *messages[cut_at:])
        stable = len(head) + 1 + len(words)
        return Compaction(out, (span,), tuple(gone), settled=len(gone), stable=stable,
                          steady=stable, noted=len(head) + 1)


def _short_words(message: Message) -> bool:
    """Whether a user message is short, or holds a short text among its parts: a format
    that joins neighbouring user messages (Anthropic's, Gemini's) puts the user's words in
    one message with the long outputs beside them, and the words stay."""
    return len(message.text) < LONG_CHARS or any(
        p.kind == "text" and len(p.text) < LONG_CHARS for p in message.parts)


def _what(gone: Sequence[Message]) -> str:
    calls = sum(len(m.tool_calls) for m in gone)
    replies = sum(1 for m in gone if m.role == "assistant")
    said = sum(1 for m in gone if m.role == "user")
    parts = [f"{replies} agent turns", f"{calls} tool calls" if calls else "",
             f"{said} long user messages" if said else ""]
    return ", ".join(p for p in parts if p)
