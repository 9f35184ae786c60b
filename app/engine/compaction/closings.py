"""The blocks an agent's earlier call closed, for its next call to carry on from.

A closed block stays closed, with the same turns, however the run grows: each choice
``fast`` makes rests on the turns up to the block's closing alone (see
``fast.closed_blocks``), and a block whose closing does not pay yet does not close at
the ends an earlier call found it did not. A warm call still weighed the whole run again:
every turn counted, every end of every block looked up among the notes (a quarter of a
warm call on the corpus's median run). Here each call leaves the blocks it closed, and
the first end of the next block it did not find to stay open, under the fingerprint of
the messages it was given; the next call of the loop, whose messages begin with those,
weighs only from there: about half the time (2.4 to 1.1 ms on OpenCode's longest
session), what is left being mostly the note of the open block at its new end, which
is new.

The next call finds the entry by the messages it shares with the last call: all of
them (the same call again), or all but its newest turn or two (the agent added a turn,
or a step of two). Anything else is a miss, weighed as on a cold call. The blocks are
kept as their turns' places and the messages those turns span, and used only where the
call's own turns span the same messages. A call that carries on from an entry lets it
go: one entry per agent loop in progress, each a few dozen bytes a block.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.engine.compaction.tails import identity
from app.engine.compaction.tiers import TierBudget
from app.engine.memo import CacheUsage, Memo
from app.engine.transcript.model import Message, Turn

# A closed block: the places of its first turn and of the turn after its last.
Closed = tuple[int, int]


@dataclass(frozen=True, slots=True)
class Weighed:
    """How far a call weighed its run: the blocks it closed, and the first end of the
    block after them that it did not find to stay open (ends before it do not close
    that block on any later call either)."""

    blocks: tuple[Closed, ...] = ()
    open_from: int = 0


NOTHING_WEIGHED = Weighed()

# What is kept: each block's turn places and the messages it spans, and ``open_from``.
_Kept = tuple[tuple[tuple[int, int, int, int], ...], int]
_Key = tuple[TierBudget, int, int]
# Calls back, in turns, the next call looks for the last one's entry.
_BACK = 2


class Closings:
    """The blocks each call closed, by the fingerprint of its messages, within
    ``cache_bytes`` (see ``memo``)."""

    def __init__(self, *, cache_bytes: int = 1 << 20) -> None:
        self._memo: Memo[_Key, _Kept] = Memo(cache_bytes, fingerprinted=True)

    @property
    def usage(self) -> CacheUsage:
        return self._memo.usage

    def known(self, messages: Sequence[Message], turns: Sequence[Turn],
              budget: TierBudget, head_stop: int) -> tuple[Weighed, _Key]:
        """How far a call on the start of ``messages`` weighed them (nothing if no such
        call is remembered), and the key this call's weighing is to be kept under
        (``keep``)."""
        chain = _chain(messages)
        own: _Key = (budget, head_stop, chain[-1])
        ends = [len(messages), *[t.start for t in turns[-_BACK:]][::-1]]
        for end in ends:
            key: _Key = (budget, head_stop, chain[end])
            found = self._memo.find(key)
            if found is None:
                continue
            kept, open_from = found
            blocks = tuple([(a, b) for a, b, first, last in kept
                            if b <= len(turns) and turns[a].start == first
                            and turns[b - 1].stop == last])
            if len(blocks) != len(kept):
                return NOTHING_WEIGHED, own  # the turns are cut otherwise: weighed anew
            if key != own:
                self._memo.discard(key)
            return Weighed(blocks, open_from), own
        return NOTHING_WEIGHED, own

    def keep(self, key: _Key, turns: Sequence[Turn], weighed: Weighed) -> None:
        self._memo.put(key, (tuple([(a, b, turns[a].start, turns[b - 1].stop)
                                    for a, b in weighed.blocks]), weighed.open_from))


def _chain(messages: Sequence[Message]) -> list[int]:
    """The fingerprint of each start of ``messages`` (``[i]``: of the first i), each
    from the one before and the next message's content (see ``tails.identity``)."""
    chain = [0] * (len(messages) + 1)
    at = 0
    for i, m in enumerate(messages):
        at = hash((at, identity(m)))
        chain[i + 1] = at
    return chain
