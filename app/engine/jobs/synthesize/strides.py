"""Where a budgeted call's cut stands: the moves of its stride, read again from the run.

The service keeps no state between calls, so a call finds the cut the calls before it
used by reading the run as it was at each of them (see ``budget``'s hysteresis): at the
stride's start, the fewest condensed turns that took the run then down to TARGET_SHARE
of the budget; then turn by turn, the same, unless the run as it was there outgrew the
budget with it, when the cut moves on as at a stride's start, down to TARGET_SHARE
again. Every call of the stride, whatever its caches hold, finds the same moves; the
caches only save reading a turn twice, so a call in a loop reads its own turn alone.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence

from app.engine.compaction.base import StrategyContext
from app.engine.jobs.synthesize.budget import (
    TARGET_SHARE,
    Compact,
    Condensed,
    Grid,
    Olders,
    condensed,
    fingerprints,
    first_fitting,
    first_fitting_near,
    stride_start,
)
from app.engine.memo import Memo
from app.engine.transcript.model import Message

# The tokens of some of the run's messages as the call would send them (lowered to the
# wire's shapes).
Size = Callable[[Sequence[Message]], int]
# The bytes each memo may hold. An entry is kept under its key's fingerprint, a few dozen
# bytes with its value: a stride's first cut, one a conversation; its readings, one for
# each of the turns near the budget (a few dozen a stride at 8k), so a fleet of a
# thousand budgeted loops keeps each one's current stride.
FLOOR_MEMO_BYTES = 1 << 20
MOVES_MEMO_BYTES = 1 << 23


class Fitting:
    """One call's search for its cut: the run, its grid, and what every reading of it
    shares (the digest's older parts, written once a call)."""

    def __init__(self, messages: Sequence[Message], context: StrategyContext, sub: Compact,
                 cuts: Grid, tokens: int, size: Size, *, whole: bool) -> None:
        self.messages = messages
        self.context = context
        self.sub = sub
        self.cuts = cuts
        self.tokens = tokens
        self.size = size
        # Points after which blocks would close into notes are passed over (see
        # synthesizer.wholly).
        self.whole = whole
        self.olders: Olders = {}
        # Each cut made, by the turns and point: the stride's reading of this call's own
        # turn makes the cut the search then tries first.
        self._cuts: dict[tuple[int, int, bool], Condensed] = {}

    def cut(self, turns: int, point: int, *, bare: bool = False) -> Condensed:
        """The run's first ``turns`` turns with the cut at ``point`` (an index into the
        grid's points)."""
        found = self._cuts.get((turns, point, bare))
        if found is not None:
            return found
        every = self.context.segments.turns
        at = self.cuts.points[point]
        anchor = self.cuts.anchor(at)
        made = condensed(self.messages[: every[turns - 1].stop],
                         self.context.segments.head_stop, every[at].start, self.sub,
                         self.context, tokens=self.tokens, bare=bare, olders=self.olders,
                         anchor_at=every[anchor].start if anchor else None)
        self._cuts[turns, point, bare] = made
        return made

    def size_at(self, turns: int, point: int) -> int:
        """The tokens of the run's first ``turns`` turns cut at ``point``: past any
        budget where blocks close after the digest and such points are passed over."""
        cut = self.cut(turns, point)
        if self.whole and cut.noted:
            return self.tokens * 2 + 1
        return self.size(cut.compaction.messages)

    def floor(self, turns: int, low: int = 0) -> int:
        """The fewest of the cut points condensed, from ``low`` on, that take the run's
        first ``turns`` turns down to TARGET_SHARE of the budget (0 when they fit there
        without condensing)."""
        every = self.context.segments.turns
        target = int(self.tokens * TARGET_SHARE)
        if not low and self.size(self.sub(self.messages[: every[turns - 1].stop])[0]
                                 .messages) <= target:
            return 0
        within = bisect_left(self.cuts.points, turns)  # the points inside those turns
        # A move within a stride lands near the cut before it; a stride's first, anywhere.
        search = first_fitting_near if low else first_fitting
        found = search(lambda i: self.size_at(turns, i) <= target, low, within - 1)
        return found if found is not None else max(within - 1, low)

    def moved(self, turns: int, floor: int) -> tuple[int, int]:
        """The cut point for the run's first ``turns`` turns, given ``floor`` the one
        before, and a bound on the output's tokens there: ``floor`` while it fits the
        budget, else as at a stride's start from the point after it."""
        within = bisect_left(self.cuts.points, turns)
        if floor >= within:
            return floor, self.tokens + 1
        size = self.size_at(turns, floor)
        if size <= self.tokens or floor == within - 1:
            return floor, size
        moved = self.floor(turns, low=floor + 1)
        return moved, self.size_at(turns, moved)


class Strides:
    """Each stride's first cut and each reading of the run within a stride, by the run
    as it was there (a warm call that missed one would read the stride again)."""

    def __init__(self) -> None:
        self._floors: Memo[tuple[object, ...], int] = Memo(FLOOR_MEMO_BYTES,
                                                            fingerprinted=True)
        self._moves: Memo[tuple[object, ...], tuple[int, int]] = Memo(MOVES_MEMO_BYTES,
                                                                       fingerprinted=True)

    def floor(self, fitting: Fitting, sizes: Sequence[int], key: tuple[object, ...]) -> int:
        """The first cut point the call may use (see the module's docstring), given each
        turn's tokens; ``key``: what else the cut rests on (the budget, the strategy)."""
        tokens = fitting.tokens
        start = stride_start(sizes, tokens)
        turns = fitting.context.segments.turns
        first = max(start, 1)
        prints = fingerprints(fitting.messages,
                              [turns[t - 1].stop for t in range(first, len(turns) + 1)])
        floor = 0
        if start:
            floor = self._floors.get((prints[0], *key), lambda _: fitting.floor(start))
        # A bound on the output at the last turn read: a turn adds at most its own tokens
        # (the turns before it are cut, never grown), so a turn is read only when the
        # tokens added since the last reading could have taken the output past the budget.
        bound = tokens + 1
        for turn in range(start + 1, len(turns) + 1):
            bound += sizes[turn - 1]
            if bound <= tokens:
                continue

            def read(_: object, turn: int = turn, at: int = floor) -> tuple[int, int]:
                return fitting.moved(turn, at)

            floor, bound = self._moves.get((prints[turn - first], floor, *key), read)
        return floor
