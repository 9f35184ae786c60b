"""The notes of closed blocks, remembered by the blocks' content.

A closed block's notes are the same on every later call (see ``blocks``): the
agent resends the block as it was, and its notes depend on nothing else but
whether they open the notes and which lines take their aged form. Writing them
anew from the cached run summaries still walked every run of every block, about a
fifth of a warm call of a customer-service run, where user messages cut the blocks
into many short runs. Here a block's notes are made once and replayed.

What is kept holds no message the caller sent: the user and system messages a note
leaves in place, and the originals of what it replaced, are kept as their places in
the block and taken from the current request, so a hit returns the caller's own
objects (the synthesizer checks that the user's messages are the ones it was sent,
and a handle expands to what this request sent).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from app.engine.compaction.base import Span, StrategyContext
from app.engine.compaction.ledger import Ledger
from app.engine.compaction.notes import Notes, Written
from app.engine.footprint import POINTER, TUPLE_HEADER, footprint
from app.engine.memo import CacheUsage, Memo
from app.engine.transcript.model import Message
from app.engine.transcript.sizes import size_of

# A block's content: per message its index, role, texts, result flags and calls, flat
# (one tuple per block, where one per message cost twice as long to build and hash).
BlockKey = tuple[object, ...]


def content(region: Sequence[Message]) -> BlockKey:
    """Everything of ``region`` a note reads (see ``runs._identity`` and
    ``Handles.feed``) and the wire index of each message, which its lines and spans
    name. A message's calls are preceded by their count, so no two regions share a key."""
    key: list[object] = []
    for m in region:
        parts = m.parts
        key.append(m.index)
        key.append(m.role)
        key.append(parts[0].text if len(parts) == 1 else tuple([p.text for p in parts]))
        key.append(m.tool_call_id)
        key.append(m.is_error)
        key.append(len(m.tool_calls))
        for call in m.tool_calls:
            key.append(call.id)
            key.append(call.name)
            key.append(call.arguments)
    return tuple(key)


def _weigh(key: object, made: _Made) -> int:
    return footprint(key) + made.size()


class _Made:
    """A block's notes as written, with the caller's messages kept as their places in
    the block."""

    def __init__(self, region: Sequence[Message], written: Written) -> None:
        place = {id(m): i for i, m in enumerate(region)}
        self.messages: tuple[Message | int, ...] = tuple(
            [place.get(id(m), m) for m in written.messages])
        self.dropped: tuple[int, ...] = tuple([place[id(m)] for m in written.dropped])
        # Each span names a run of the block: kept without its originals, with where
        # the run starts in the block.
        self.spans: tuple[tuple[Span, int], ...] = tuple(
            [(Span(s.handle, s.kind, s.first, s.last, s.messages, s.tools),
              place[id(s.originals[0])]) for s in written.spans])
        self.ledgers: tuple[Ledger, ...] = tuple(written.ledgers)
        self.last_note = written.last_note

    def size(self) -> int:
        """The bytes it holds (see ``footprint``). Its ledgers are its runs' summaries'
        own, measured with them (``Runs``): here only the tuple of them counts."""
        return size_of(self.messages) + footprint(self.dropped) + footprint(self.spans) + \
            TUPLE_HEADER + POINTER * len(self.ledgers) + footprint(self.last_note)

    def replayed(self, region: Sequence[Message]) -> Written:
        out = Written()
        out.messages = [region[x] if isinstance(x, int) else x for x in self.messages]
        out.dropped = [region[i] for i in self.dropped]
        out.spans = [Span(s.handle, s.kind, s.first, s.last, s.messages, s.tools,
                          tuple(region[at : at + s.messages])) for s, at in self.spans]
        out.ledgers = list(self.ledgers)  # read, never changed (see ledger.joined)
        out.last_note = self.last_note
        return out


class BlockNotes:
    """``Notes.write`` for closed blocks, remembered by content, first and age, within
    ``cache_bytes`` of keys and notes (see ``footprint``)."""

    def __init__(self, notes: Notes, *, cache_bytes: int = 32 << 20) -> None:
        self._notes = notes
        self._memo: Memo[tuple[bool, int, BlockKey], _Made] = Memo(cache_bytes, _weigh,
                                                                      fingerprinted=True)

    @property
    def usage(self) -> CacheUsage:
        return self._memo.usage

    @property
    def runs_usage(self) -> CacheUsage:
        """The usage of the runs' summaries the notes are written from."""
        return self._notes.usage

    def write(self, region: Sequence[Message], context: StrategyContext, *,
              aged_before: int, first: bool) -> Written:
        made = self._memo.get((first, aged_before, content(region)),
                              partial(self._made, region, context))
        return made.replayed(region)

    def _made(self, region: Sequence[Message], context: StrategyContext,
              key: tuple[bool, int, BlockKey]) -> _Made:
        written = self._notes.write(region, context, aged_before=key[1], first=key[0])
        return _Made(region, written)
