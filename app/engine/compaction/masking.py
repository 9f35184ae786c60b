"""The ``observation-mask`` strategy: keep every action, hide old tool outputs.

Cheaper than summarizing and often as good for coding agents: the model
still sees what it did, in order, and can ask for an output back by handle.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from app.engine.compaction.base import Compaction, Span, StrategyContext, cut_reasoning, span_of
from app.engine.compaction.rebuild import older_and_recent, tail_turns
from app.engine.prompts import MASKED_RESULT
from app.engine.reading.outcomes import shorten
from app.engine.transcript.model import Message, Part, calls_by_result

# Results shorter than this cost less than their placeholder.
_MIN_MASKED_CHARS = 200


class ObservationMask:
    name = "observation-mask"

    def compact(self, messages: Sequence[Message], context: StrategyContext) -> Compaction:
        turns = context.segments.turns
        older, _ = older_and_recent(messages, context)
        cut_at = older[-1].stop if older else context.segments.head_stop
        calls = calls_by_result(messages)
        out: list[Message] = []
        spans: list[Span] = []
        dropped: list[Message] = []
        for m in messages[:cut_at]:
            if m.role == "assistant":
                # Its reasoning as the recent turns showed it: the text reads the same
                # once the turn leaves the window.
                kept, cut = cut_reasoning(m, context)
                out.append(kept)
                if cut is not None:
                    spans.append(cut)
                    dropped.append(m)
                continue
            if m.role != "tool" or len(m.text) < _MIN_MASKED_CHARS:
                out.append(m)
                continue
            span = span_of("masked", [m], context.handles)
            outcome = context.outcomes.of(m)
            label = "failed: " if outcome.error else "began: "
            first = label + (outcome.line if outcome.error else shorten(outcome.line, 80)) \
                if outcome.line else ""
            call = calls.get(id(m))
            text = MASKED_RESULT.format(
                name=call.name if call is not None else "tool", chars=len(m.text),
                first=f"; {first}" if first else "", handle=span.handle,
            )
            if len(text) >= len(m.text):
                out.append(m)
                continue
            out.append(replace(m, parts=(Part("text", text),)))
            spans.append(span)
            dropped.append(m)
        tail_turns(messages, [t for t in turns if t.start >= cut_at], context, out, spans,
                   dropped)
        return Compaction(tuple(out), tuple(spans), tuple(dropped))
