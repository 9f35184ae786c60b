"""Text actions lifted into calls for the strategies, and lowered back for the wire.

Strategies know tool calls and their results: notes list them, the ledger reads
their paths and commands, the tail cuts their results, phases count them. A
text-action agent (see ``reading.textactions``) has none on the wire, so before
a strategy runs, each (action, observation) pair becomes an assistant message
with one call and a tool result answering it, and each edit block an assistant
wrote becomes an ``edit`` call with an empty result made here; after, every
message goes back to its wire shape: an action message as the agent wrote it,
an observation as the user message it was (cut, when the strategy cut it), and
the results made here gone. Nothing a call id names here reaches the caller.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from app.engine.compaction.base import Compaction, Span
from app.engine.reading.textactions import (
    EDIT_MARK,
    MARKUP_CALL,
    Block,
    TextActions,
)
from app.engine.transcript.model import Message, Part, ToolCall, Turn

# The ids of the calls lifting makes. None reaches the wire: every message that holds
# one is lowered back, or dropped when it was made here.
LIFTED_CALL = "cs_text_"
# A console command the user typed: a call no model made (see ``calls_made``).
CONSOLE_CALL = "cs_console_"
# A block a harness appends to its results (environment details, reminders) is its
# boilerplate once at least this many results hold it, and this share of them; it is
# kept once, in the newest result that holds it.
_BOILERPLATE_AT_LEAST = 3
_BOILERPLATE_SHARE = 0.5


@dataclass(frozen=True)
class Lifted:
    """A transcript as strategies see it, and the way back to the wire."""

    messages: tuple[Message, ...]
    # Wire index -> the message as it came, for each lifted message.
    originals: dict[int, Message]
    # ``id()`` of each observation as it came: a strategy may fold it into a note, as it
    # folds any tool result, so it is exempt from "every user message stays".
    foldable: frozenset[int]
    # ``id()`` of a user message as it came -> the copy strategies see in its place, its
    # stale boilerplate taken out: the copy stays where "every user message stays".
    stand_ins: dict[int, Message] = field(default_factory=dict)

    def lower(self, messages: Sequence[Message]) -> tuple[Message, ...]:
        if not self.originals:
            return tuple(messages)
        return tuple(self._lower(m) for m in messages if not _made_here(m))

    def _kept(self, messages: Sequence[Message], count: int | None) -> int | None:
        """``count`` leading messages of ``messages``, as many once lowered."""
        if count is None:
            return None
        return count - sum(1 for m in messages[:count] if _made_here(m))

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
        out = compaction.messages
        return Compaction(self.lower(out), spans, self.lower(compaction.dropped),
                          compaction.settled, self._kept(out, compaction.stable),
                          self._kept(out, compaction.steady), self._kept(out, compaction.noted))


def _made_here(message: Message) -> bool:
    """A result this module made for an edit block: never on the wire."""
    return (message.role == "tool" and message.index < 0 and message.tool_call_id is not None
            and message.tool_call_id.startswith(LIFTED_CALL))


def lift(messages: Sequence[Message], actions: TextActions | None = None) -> Lifted:
    """Each text action (or console command) answered by an observation as a call and
    its result, and each edit block as a call with an empty result, or the harness's
    report of the edits for the last."""
    actions = actions or TextActions()
    answered = set(actions.observations(messages))
    if not answered and not any(EDIT_MARK in m.text for m in messages
                                if m.role == "assistant" and not m.tool_calls):
        return Lifted(tuple(messages), {}, frozenset())
    out: list[Message] = []
    originals: dict[int, Message] = {}
    stand_ins: dict[int, Message] = {}
    answering = ""  # the call id the next message answers, right after its action
    # Lowering finds a message's original by its wire index: a wire message read as
    # several (an Anthropic turn with results and text) is left as it is.
    seen: set[int] = set()
    shared: set[int] = set()
    for m in messages:
        (shared if m.index in seen else seen).add(m.index)
    stale = _stale_boilerplate(messages, answered, actions)
    for position, m in enumerate(messages):
        answered_next = position + 1 in answered and messages[position + 1].index >= 0 \
            and messages[position + 1].index not in shared
        if m.index < 0 or m.index in shared:  # only what is lifted is lowered
            out.append(m)
        elif m.role == "assistant" and not m.tool_calls and EDIT_MARK in m.text and (
                edited := _edits(m, actions, originals, answered=answered_next)):
            out.extend(edited)
            # The harness's report of the edits answers the last of them.
            answering = edited[0].tool_calls[-1].id if answered_next else ""
            continue
        elif answered_next:
            # A user's console command, or an agent's action in its text.
            read = (actions.command(m.text) if m.role == "user" else None) \
                or actions.action(m.text)
            parts = (Part("text", read.thought),) if read.thought else ()
            kind = CONSOLE_CALL if m.role == "user" else \
                MARKUP_CALL if read.markup else LIFTED_CALL
            answering = f"{kind}{m.index}"
            out.append(Message("assistant", parts,
                               (ToolCall(answering, read.name, read.arguments),),
                               raw=m.raw, index=m.index))
            originals[m.index] = m
            continue
        elif position in answered and answering:
            kept = _without(m.parts, stale[position], actions) if position in stale \
                else m.parts
            out.append(Message("tool", kept, tool_call_id=answering, raw=m.raw,
                               index=m.index))
            originals[m.index] = m
        elif m.role == "user" and position in stale:
            # A user message the harness wrote or added to (the user's answer to the
            # agent's question, a reminder, a resumed task): its words stay, the harness's
            # block goes where a newer message shows it again.
            trimmed = Message("user", _without(m.parts, stale[position], actions), name=m.name,
                              raw=m.raw, index=m.index)
            stand_ins[id(m)] = trimmed
            out.append(trimmed)
        else:
            out.append(m)
        answering = ""
    # Every user message lifted (an observation, a console command) may be folded.
    foldable = frozenset(id(m) for m in messages if m.role == "user" and m.index in originals)
    return Lifted(tuple(out), originals, foldable, stand_ins)


def _stale_boilerplate(messages: Sequence[Message], answered: set[int],
                       actions: TextActions) -> dict[int, frozenset[str]]:
    """For each user message after the task, the boilerplate blocks a newer one shows
    again. A tag's blocks are boilerplate when most observations hold one and most of
    them repeat most of the lines of the one before (environment details, where only
    the time changes), not when only the tag repeats (every ``<output>`` holds another
    command's output). The harness appends the same block to the other messages it
    sends as the user (the user's answer to a question, a reminder, a resumed task),
    so those hold a stale copy too."""
    found = _blocks_by_tag(messages, sorted(answered), actions)
    least = max(_BOILERPLATE_AT_LEAST, _BOILERPLATE_SHARE * len(answered))
    tags = {tag for tag, seen in found.items() if len(seen) >= least and sum(
        1 for (_, a), (_, b) in pairwise(seen) if actions.repeats((tag, a, b))
    ) >= _BOILERPLATE_SHARE * (len(seen) - 1)}
    if not tags:
        return {}
    task = next((i for i, m in enumerate(messages) if m.role == "user"), len(messages))
    holders = _blocks_by_tag(messages, [i for i in range(task + 1, len(messages))
                                        if messages[i].role == "user"], actions)
    stale: dict[int, set[str]] = {}
    for tag in tags:
        held = [i for i, _ in holders.get(tag, ())]
        for i in held[:-1]:
            if i != held[-1]:
                stale.setdefault(i, set()).add(tag)
    return {i: frozenset(tags) for i, tags in stale.items()}


def _blocks_by_tag(messages: Sequence[Message], positions: Sequence[int],
                   actions: TextActions) -> dict[str, list[tuple[int, Block]]]:
    """Each tag's blocks in the text of the messages at ``positions``, in order: the
    message's position, and the block as its text and its place among that text's
    blocks of the tag (their lines are read only to compare two: see ``repeats``)."""
    found: dict[str, list[tuple[int, Block]]] = {}
    for i in positions:
        for p in messages[i].parts:
            if p.kind == "text":
                places: dict[str, int] = {}
                for tag in actions.block_tags(p.text):
                    k = places.get(tag, 0)
                    places[tag] = k + 1
                    found.setdefault(tag, []).append((i, (p.text, k)))
    return found


def _without(parts: tuple[Part, ...], tags: frozenset[str], actions: TextActions,
             ) -> tuple[Part, ...]:
    """The parts without those blocks; a part left empty goes (a provider refuses an
    empty text block), unless nothing would be left."""
    kept: list[Part] = []
    for p in parts:
        if p.kind != "text":
            kept.append(p)
            continue
        text = actions.without(p.text, tags)
        if text.strip():
            kept.append(p if text == p.text else Part("text", text, p.raw))
    return tuple(kept) if kept else parts


def _edits(message: Message, actions: TextActions, originals: dict[int, Message], *,
           answered: bool) -> list[Message]:
    """An assistant message with edit blocks, as calls each with an empty result, but
    the last when the next message (``answered``) is its result; none if no block reads."""
    edits, thought = actions.edits(message.text)
    if not edits:
        return []
    originals[message.index] = message
    calls = tuple(ToolCall(f"{LIFTED_CALL}{message.index}_{k}", e.name, e.arguments)
                  for k, e in enumerate(edits))
    parts = (Part("text", thought),) if thought else ()
    made = calls[:-1] if answered else calls
    return [Message("assistant", parts, calls, raw=message.raw, index=message.index),
            *(Message("tool", (), tool_call_id=c.id) for c in made)]


def calls_made(messages: Sequence[Message], turns: Sequence[Turn]) -> list[int]:
    """How many model calls the run had made before each turn (and, last, after them
    all): one a turn, but for a console command the user typed, which no model made."""
    made = [0] * (len(turns) + 1)
    for i, t in enumerate(turns):
        calls = messages[t.start].tool_calls
        typed = bool(calls) and calls[0].id.startswith(CONSOLE_CALL)
        made[i + 1] = made[i] + (0 if typed else 1)
    return made
