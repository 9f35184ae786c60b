"""Text actions lifted into calls for the strategies, and lowered back for the wire.

Strategies know tool calls and their results: notes list them, the ledger reads
their paths and commands, the tail cuts their results, phases count them. A
text-action agent (see ``reading.textactions``) has none on the wire, so before
a strategy runs, each (action, observation) pair becomes an assistant message
with one call and a tool result answering it; after, every message goes back to
its wire shape: an action message as the agent wrote it, an observation as the
user message it was (cut, when the strategy cut it). Nothing a call id names
here ever reaches the caller.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.engine.compaction.base import Compaction, Span
from app.engine.reading.textactions import observations, read_action
from app.engine.transcript.model import Message, Part, ToolCall

# Ids of the calls lifting makes; a wire id never starts so, as none is lowered back.
LIFTED_CALL = "cs_text_"


@dataclass(frozen=True)
class Lifted:
    """A transcript as strategies see it, and the way back to the wire."""

    messages: tuple[Message, ...]
    # Wire index -> the message as it came, for each lifted message.
    originals: dict[int, Message]
    # ``id()`` of each observation as it came: a strategy may fold it into a note, as it
    # folds any tool result, so it is exempt from "every user message stays".
    foldable: frozenset[int]

    def lower(self, messages: Sequence[Message]) -> tuple[Message, ...]:
        if not self.originals:
            return tuple(messages)
        return tuple(self._lower(m) for m in messages)

    def _lower(self, message: Message) -> Message:
        original = self.originals.get(message.index) if message.index >= 0 else None
        if original is None:
            return message
        if message.role == "assistant" or message.parts is original.parts:
            # An action stays as the agent wrote it: the command is the call's whole point.
            return original
        # A cut observation: its text in the place of the original's, so the wire message
        # keeps its shape (a string, or a list of parts) and every other field.
        like = next((p.raw for p in original.parts if p.kind == "text"), None)
        parts = tuple(Part(p.kind, p.text, like if p.raw is None else p.raw)
                      for p in message.parts)
        return Message("user", parts, raw=original.raw, index=original.index)

    def lower_compaction(self, compaction: Compaction) -> Compaction:
        if not self.originals:
            return compaction
        spans = tuple(Span(s.handle, s.kind, s.first, s.last, s.messages, s.tools,
                           self.lower(s.originals)) for s in compaction.spans)
        return Compaction(self.lower(compaction.messages), spans,
                          self.lower(compaction.dropped), compaction.settled,
                          compaction.stable, compaction.steady, compaction.noted)


def lift(messages: Sequence[Message]) -> Lifted:
    """Each text action answered by an observation as a call and its result."""
    found = observations(messages)
    if not found:
        return Lifted(tuple(messages), {}, frozenset())
    out = list(messages)
    originals: dict[int, Message] = {}
    for position in found:
        action, answer = messages[position - 1], messages[position]
        if action.index < 0 or answer.index < 0:
            continue  # only what the caller sent is lifted, so only that is lowered
        read = read_action(action.text)
        call_id = f"{LIFTED_CALL}{action.index}"
        parts = (Part("text", read.thought),) if read.thought else ()
        out[position - 1] = Message("assistant", parts,
                                    (ToolCall(call_id, read.name, read.arguments),),
                                    raw=action.raw, index=action.index)
        out[position] = Message("tool", answer.parts, tool_call_id=call_id, raw=answer.raw,
                                index=answer.index)
        originals[action.index] = action
        originals[answer.index] = answer
    foldable = frozenset(id(messages[p]) for p in found if messages[p].index in originals)
    return Lifted(tuple(out), originals, foldable)
