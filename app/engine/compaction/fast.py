"""The ``fast`` strategy: older turns become prior-work notes in closed blocks, so the
output only grows at its end from call to call and a provider's prompt cache keeps it.

The turns after the head are cut into blocks of the tier's ``block_turns``. A
block closes once the turns after it hold at least the tier's ``closing`` turns
and tokens (by default its recent window); both only grow as the agent appends,
so a closed block stays closed, and the blocks follow from the transcript alone
(the service keeps no state). Each closed block becomes its note, the same bytes on
every later call; the turns after the last closed block stay as they are (long
arguments and results cut where that pays, the newest result whole) and grow a step a call
until the next block closes. What changes at every closing (the artifact
ledger) comes after the notes; the nudge the synthesizer adds comes last.

A closing is not free: from the new note on, the output is new to the provider's
cache and is paid in full (or at the cache-write price) once, while the note saves
the block's cached tokens on each later call. Where the tier sets
``closing_payback``, a block closes only when that saving pays the rewrite back
within that many times the calls the run has made so far (a run is about as likely
to go on as long again as it has lasted); otherwise it grows by a turn and is weighed
again at the next call, up to ``MOST_SIZES`` blocks' worth of turns. Short runs of
short turns then keep their turns as they came, and a long run's blocks close as
before.

The newest ``full_blocks`` closed blocks keep their whole notes; older blocks
take their aged form (reads left out; failures, writes and the agent's words
kept), a batch of ``age_batch`` at a time. Notes change only when a block
closes, and a note that ages makes every later token of the output new to the
provider's cache: aging in batches pays that every few closings rather than at
each (see ``aged_blocks``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from app.engine.compaction import payback as cache_price
from app.engine.compaction.base import Compaction, Span, StrategyContext
from app.engine.compaction.blocknotes import BlockNotes
from app.engine.compaction.closings import NOTHING_WEIGHED, Closings, Weighed
from app.engine.compaction.ledger import Ledger, joined
from app.engine.compaction.lifting import calls_made
from app.engine.compaction.notes import ALL_AGED, Notes, Written, render_ledger
from app.engine.compaction.rebuild import TrimPays, tail_turns
from app.engine.compaction.tails import Tails
from app.engine.compaction.tiers import TAIL_BUDGETS
from app.engine.memo import CacheUsage
from app.engine.prompts import MARKER
from app.engine.transcript.model import Message, Part, Turn

Block = tuple[Turn, ...]
# The tokens of a region's notes, were it closed now (first: it opens the notes).
NoteTokens = Callable[[Sequence[Message], bool], int]

# The longest a block grows while it does not pay, in blocks' worth of turns.
MOST_SIZES = 8
# The most tokens a turn's lines in a note take, about: a call and its cut result.
_NOTE_MOST = 400


class FastStrategy:
    name = "fast"

    def __init__(self, notes: Notes | None = None, tails: Tails | None = None, *,
                 notes_bytes: int = 32 << 20, closings: Closings | None = None) -> None:
        # A closed block's notes are the same bytes on every later call: made once.
        self._notes = BlockNotes(notes or Notes(), cache_bytes=notes_bytes)
        # The recent turns as the last call trimmed them: between closings each call
        # sends them again with a turn more.
        self._tails = tails or Tails()
        # The blocks the last call closed: the next one weighs only the turns after them.
        self._closings = closings or Closings()

    def usage(self) -> dict[str, CacheUsage]:
        """How the memos a warm call rests on have served (see ``CacheUsage``)."""
        return {"tails": self._tails.usage, "block_notes": self._notes.usage,
                "run_summaries": self._notes.runs_usage, "closings": self._closings.usage}

    def blocks(self, messages: Sequence[Message], context: StrategyContext,
               ) -> tuple[list[Block], tuple[Turn, ...]]:
        """The closed blocks and the turns after them, weighed with this strategy's notes."""
        blocks, tail, _ = self._weighed(messages, context)
        return blocks, tail

    def _weighed(self, messages: Sequence[Message], context: StrategyContext,
                 ) -> tuple[list[Block], tuple[Turn, ...], dict[tuple[int, int], Written]]:
        """``blocks``, with the whole notes written while weighing them, by their regions'
        first and last messages: the newest blocks' notes, which ``compact`` sends whole,
        are then looked up once a call. The messages themselves are the key, not their
        wire indexes: the result lifting makes for an edit block has none (-1), so two
        regions from one message to such a result would share a key, and a block weighed
        a turn at a time would be sent with the note of a shorter region."""
        count = context.tokens
        made: dict[tuple[int, int], Written] = {}

        def note_tokens(region: Sequence[Message], first: bool) -> int:
            written = self._notes.write(region, context, first=first, aged_before=-1)
            made[id(region[0]), id(region[-1])] = written
            return count(written.messages) if count is not None else 0

        if count is None:
            blocks, tail, _ = closed_blocks(messages, context, note_tokens)
            return blocks, tail, made
        turns = context.segments.turns
        known, key = self._closings.known(messages, turns, context.budget,
                                          context.segments.head_stop)
        blocks, tail, weighed = closed_blocks(messages, context, note_tokens, known)
        self._closings.keep(key, turns, weighed)
        return blocks, tail, made

    def compact(self, messages: Sequence[Message], context: StrategyContext) -> Compaction:
        blocks, tail, made = self._weighed(messages, context)
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
                weighed = made.get((id(region[0]), id(region[-1]))) if j >= aged else None
                written = weighed if weighed is not None else self._notes.write(
                    region, context, first=j == 0, aged_before=ALL_AGED if j < aged else -1)
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
        turns = context.segments.turns
        first = len(turns) - len(tail)
        calls = calls_made(messages, turns)
        # Whether trimming a tail turn pays rests on the calls made before it, which the
        # tail's own messages do not tell: a part of a run (the turns after a budget's
        # digest) has fewer, so the tails are kept by that count too.
        tail_turns(messages, tail, context, out, spans, dropped, self._tails,
                   trim_pays(context, first, calls), calls_before=calls[first])
        # The newest turn keeps its result whole, and is cut like the others once a turn
        # follows it if that pays: it is the one part of the tail the next call may send
        # otherwise.
        last = tail[-1].stop - tail[-1].start if tail else 0
        return Compaction(tuple(out), tuple(spans), tuple(dropped), settled, stable=stable,
                          steady=len(out) - last, noted=noted if blocks else None)


def trim_pays(context: StrategyContext, first: int, made: Sequence[int]) -> TrimPays | None:
    """Whether a turn of the tail (whose first turn is the run's ``first``-th) is trimmed
    once a turn follows it. The newest turn went out whole, and its trimmed form is new
    to the provider's cache from the first message it changes: like a closing, that pays
    only when what it takes out, over ``closing_payback`` times the calls made by then,
    covers that rewrite. A run's last calls trimmed its turns at a loss: on the test split,
    28 runs cost more than sending them whole, 16 with this. The choice rests on the turn
    and the calls made before the next one alone, so every later call makes it again the
    same way; a turn left whole goes into its block's note when the block closes.
    ``made``: the calls made before each turn (see ``calls_made``)."""
    count = context.tokens
    payback = context.budget.closing_payback
    if count is None or not payback:
        return None

    def pays(k: int, whole: Sequence[Message], cut: Sequence[Message]) -> bool:
        same = next((i for i, (a, b) in enumerate(zip(whole, cut, strict=True)) if a is not b),
                    len(cut))
        rewritten = count(cut[same:])
        calls = payback * (made[first + k + 1] + 1)
        return cache_price.pays(count(whole[same:]) - rewritten, rewritten, calls)

    return pays


def aged_blocks(closed: int, full_blocks: int, age_batch: int) -> int:
    """How many of the oldest closed blocks take their aged form: all but the newest
    ``full_blocks``, rounded down to a multiple of ``age_batch`` (0: none ever age). The
    count only grows as blocks close, so an aged note never takes its whole form again."""
    if not full_blocks or closed <= full_blocks:
        return 0
    batch = max(age_batch, 1)
    return (closed - full_blocks) // batch * batch


def closed_blocks(messages: Sequence[Message], context: StrategyContext,
                  note_tokens: NoteTokens | None = None, known: Weighed = NOTHING_WEIGHED,
                  ) -> tuple[list[Block], tuple[Turn, ...], Weighed]:
    """The closed blocks, oldest first, the turns after them, and how far they were
    weighed. A block holds at least ``block_turns`` turns, and more while closing it
    would not pay (see the module's docstring); each choice rests on the turns up to its
    closing alone, so a later call makes the same blocks, and finds that the open block
    does not close at the ends an earlier call found it did not. ``known``: how far an
    earlier call on the start of these messages weighed them (see ``Closings``): its
    blocks and those ends are not weighed again."""
    turns = context.segments.turns
    budget = context.budget
    size = max(budget.block_turns, 1)
    count = context.tokens
    least_turns, least_tokens = budget.closing
    payback = budget.closing_payback if note_tokens is not None else 0.0
    # The turns before ``first`` are in known blocks: nothing of theirs is read.
    first = known.blocks[-1][1] if known.blocks else 0
    per_turn = [0] * len(turns)
    if count is not None and (least_tokens or payback):
        for i in range(first, len(turns)):
            t = turns[i]
            per_turn[i] = count(messages[t.start : t.stop])
    else:
        payback = 0.0
    made = calls_made(messages, turns) if payback else []
    after = [0] * (len(turns) + 1)  # tokens of the turns from each position to the end
    # The same, each turn's work (all but the user's words, which notes keep whole)
    # counted up to _NOTE_MOST: about the most a note can take.
    most = [0] * (len(turns) + 1)
    for i in range(len(turns) - 1, first - 1, -1):
        after[i] = after[i + 1] + per_turn[i]
        if payback:
            t = turns[i]
            said = count([m for m in messages[t.start : t.stop] if m.role in ("user", "system")]) \
                if count is not None else 0
            most[i] = most[i + 1] + said + min(per_turn[i] - said, _NOTE_MOST)

    def closing_pays(start: int, end: int, first: bool) -> bool:
        """Whether closing turns[start:end] now pays back within ``payback`` times the
        calls made so far (one before each turn, and the one that closes it)."""
        if not payback:
            return True
        closing = min(end + max(least_turns, 1), len(turns))
        # The turns between it and the newest one are sent again; the newest is new to
        # the cache whether a block closes or not. A block that closes only once the
        # turns after it reach ``least_tokens`` (a budget's recent window) has those sent
        # again: at 128k, closing a block at the tier's size whenever it passed the window
        # rewrote 100k tokens every few calls.
        resent = max(after[end] - after[max(closing - 1, end)], least_tokens)
        block = after[start] - after[end]
        calls = payback * (made[closing] + 1)
        if not cache_price.pays(block, resent, calls):  # no note could pay: skip writing it
            return False
        # A note as long as its turns' work capped: a block of long results pays with room
        # to spare, and its note need not be written to know it (a cold call would write
        # the whole form of every block, where older ones only take their aged form).
        capped = most[start] - most[end]
        if cache_price.pays(block - capped, capped + resent, calls):
            return True
        assert note_tokens is not None
        note = note_tokens(messages[turns[start].start : turns[end - 1].stop], first)
        return note < block and cache_price.pays(block - note, note + resent, calls)

    def closes(end: int) -> bool:
        return len(turns) - end >= least_turns and after[end] >= least_tokens

    blocks: list[Block] = [tuple(turns[a:b]) for a, b in known.blocks]
    closed = list(known.blocks)
    start = first
    # The ends of the block after the known ones that an earlier call found not to close.
    end = max(start + size, known.open_from)
    while True:
        # A block that does not pay grows a turn at a time, and closes at MOST_SIZES
        # blocks' worth of turns whatever it saves: a call weighs a bounded number of
        # ends, and by then the run has made many calls for a saving to count against.
        while end < start + MOST_SIZES * size and end <= len(turns) and closes(end) \
                and not closing_pays(start, end, not blocks):
            end += 1
        if end > len(turns) or not closes(end):
            break
        blocks.append(tuple(turns[start:end]))
        closed.append((start, end))
        start = end
        end = start + size
    return blocks, tuple(turns[start:]), Weighed(tuple(closed), end)
