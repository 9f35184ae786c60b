"""The ``fast`` strategy: older turns become prior-work notes in closed blocks, so the
output only grows at its end from call to call and a provider's prompt cache keeps it.

The turns after the head are cut into blocks of the tier's ``block_turns``. A
block closes once the turns after it hold at least the tier's ``closing`` turns
and tokens (by default its recent window); both only grow as the agent appends,
so a closed block stays closed, and the blocks follow from the transcript alone
(the service keeps no state). Each closed block becomes its note, the same bytes on
every later call; the turns after the last closed block stay as they are (long
arguments and results cut, the newest result whole) and grow a step a call
until the next block closes. What changes at every closing (the artifact
ledger) comes after the notes; the nudge the synthesizer adds comes last.

The newest ``full_blocks`` closed blocks keep their whole notes; older blocks
take their aged form (reads left out; failures, writes and the agent's words
kept), a batch of ``age_batch`` at a time. Notes change only when a block
closes, and a note that ages makes every later token of the output new to the
provider's cache: aging in batches pays that every few closings rather than at
each (see ``aged_blocks``).
"""

from __future__ import annotations

from collections.abc import Sequence

from app.engine.compaction.base import Compaction, Span, StrategyContext
from app.engine.compaction.blocknotes import BlockNotes
from app.engine.compaction.ledger import Ledger, joined
from app.engine.compaction.notes import ALL_AGED, Notes, render_ledger
from app.engine.compaction.rebuild import tail_turns
from app.engine.compaction.tails import Tails
from app.engine.compaction.tiers import TAIL_BUDGETS
from app.engine.memo import Usage
from app.engine.prompts import MARKER
from app.engine.transcript.model import Message, Part, Turn

Block = tuple[Turn, ...]


class FastStrategy:
    name = "fast"

    def __init__(self, notes: Notes | None = None, tails: Tails | None = None) -> None:
        # A closed block's notes are the same bytes on every later call: made once.
        self._notes = BlockNotes(notes or Notes())
        # The recent turns as the last call trimmed them: between closings each call
        # sends them again with a turn more.
        self._tails = tails or Tails()

    def usage(self) -> dict[str, Usage]:
        """How the memos a warm call rests on have served (see ``Usage``)."""
        return {"tails": self._tails.usage, "block_notes": self._notes.usage}

    def compact(self, messages: Sequence[Message], context: StrategyContext) -> Compaction:
        blocks, tail = closed_blocks(messages, context)
        out = list(messages[: context.segments.head_stop])
        spans: list[Span] = []
        dropped: list[Message] = []
        ledgers: list[Ledger] = []
        stable = len(out)
        if blocks:
            budget = context.budget
            aged = aged_blocks(len(blocks), budget.full_blocks, budget.age_batch)
            for j, block in enumerate(blocks):
                region = messages[block[0].start : block[-1].stop]
                written = self._notes.write(region, context, first=j == 0,
                                            aged_before=ALL_AGED if j < aged else -1)
                out.extend(written.messages)
                spans.extend(written.spans)
                dropped.extend(written.dropped)
                ledgers.extend(written.ledgers)
                if j < aged or not budget.full_blocks:  # its note takes no other form later
                    stable = len(out)
        noted = len(out)
        ledger = joined(ledgers)
        lines = render_ledger(ledger, reads=False).split("\n") if ledger else []
        if len(lines) > 1:  # a message of its own, marked as ours like every note
            lines[0] = f"{MARKER} {lines[0]}"
            out.append(Message("user", tuple(Part("text", line) for line in lines)))
        settled = len(dropped)
        tail_budget = TAIL_BUDGETS.get(context.budget) or context.budget.tail
        if tail_budget is not context.budget:
            context = context.with_budget(tail_budget)
        tail_turns(messages, tail, context, out, spans, dropped, self._tails)
        # The newest turn keeps its result whole, and is cut like the others once a turn
        # follows it: it is the one part of the tail the next call may send otherwise.
        last = tail[-1].stop - tail[-1].start if tail else 0
        return Compaction(tuple(out), tuple(spans), tuple(dropped), settled, stable=stable,
                          steady=len(out) - last, noted=noted if blocks else None)


def aged_blocks(closed: int, full_blocks: int, age_batch: int) -> int:
    """How many of the oldest closed blocks take their aged form: all but the newest
    ``full_blocks``, rounded down to a multiple of ``age_batch`` (0: none ever age). The
    count only grows as blocks close, so an aged note never takes its whole form again."""
    if not full_blocks or closed <= full_blocks:
        return 0
    batch = max(age_batch, 1)
    return (closed - full_blocks) // batch * batch


def closed_blocks(messages: Sequence[Message], context: StrategyContext,
                  ) -> tuple[list[Block], tuple[Turn, ...]]:
    """The closed blocks, oldest first, and the turns after them."""
    turns = context.segments.turns
    budget = context.budget
    size = max(budget.block_turns, 1)
    count = context.tokens
    least_turns, least_tokens = budget.closing
    if count is not None and least_tokens:
        per_turn = [count(messages[t.start : t.stop]) for t in turns]
    else:
        per_turn = [0] * len(turns)
    after = [0] * (len(turns) + 1)  # tokens of the turns from each position to the end
    for i in range(len(turns) - 1, -1, -1):
        after[i] = after[i + 1] + per_turn[i]
    closed = 0
    while True:
        end = (closed + 1) * size
        if len(turns) - end < least_turns or after[end] < least_tokens:
            break
        closed += 1
    blocks = [tuple(turns[j * size : (j + 1) * size]) for j in range(closed)]
    return blocks, tuple(turns[closed * size :])
