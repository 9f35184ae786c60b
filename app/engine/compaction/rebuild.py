"""The ``fast-rebuild`` strategy: older turns become prior-work notes, recent turns stay.

The window of recent turns slides a turn a step, and everything before it is
noted again on every call (from caches, so it is cheap to make): the output is
as small as the window allows, but its notes change from step to step, so a
provider's prompt cache reuses less of it than of ``fast`` (see ``blocks``).
The last note ends with the artifact ledger.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from app.engine.compaction.base import Compaction, Span, StrategyContext, trim_turn
from app.engine.compaction.ledger import joined
from app.engine.compaction.notes import Notes, aged_before, with_ledger
from app.engine.compaction.tails import Key, Tails, Trimmed, identity
from app.engine.reading.repeats import Shown
from app.engine.transcript.model import Message, Turn

# Whether the turn at this position of the tail, trimmed (the second list) rather than as
# it was sent when it was the newest (the first), pays for the rewrite: see ``fast``.
TrimPays = Callable[[int, Sequence[Message], Sequence[Message]], bool]


class RebuildStrategy:
    name = "fast-rebuild"

    def __init__(self, notes: Notes | None = None) -> None:
        self._notes = notes or Notes()

    def compact(self, messages: Sequence[Message], context: StrategyContext) -> Compaction:
        older, recent_turns = older_and_recent(messages, context)
        out = list(messages[: context.segments.head_stop])
        spans: list[Span] = []
        dropped: list[Message] = []
        if older:
            region = messages[older[0].start : older[-1].stop]
            written = self._notes.write(
                region, context, first=True,
                aged_before=aged_before(region[-1].index, context.budget.brief_after))
            ledger = joined(written.ledgers)
            if written.last_note >= 0 and ledger:
                last = written.last_note
                written.messages[last] = with_ledger(written.messages[last], ledger)
            out.extend(written.messages)
            spans.extend(written.spans)
            dropped.extend(written.dropped)
        settled = len(dropped)
        tail_turns(messages, recent_turns, context, out, spans, dropped)
        return Compaction(tuple(out), tuple(spans), tuple(dropped), settled)


def tail_turns(messages: Sequence[Message], turns: Sequence[Turn], context: StrategyContext,
               out: list[Message], spans: list[Span], dropped: list[Message],
               tails: Tails | None = None, pays: TrimPays | None = None, *,
               calls_before: int = 0) -> None:
    """The recent turns, each trimmed (see ``trim_turn``) against what the turns before
    it show. With ``tails``, the turns the last call trimmed come from there, and only
    the rest are trimmed (see ``tails``). With ``pays``, a turn whose trimming does not
    pay stays as it was sent while it was the newest; ``calls_before``: the model calls
    made before the first of the turns, which ``pays`` rests on beside the turns."""
    if not turns:
        return
    older = len(turns) - 1  # every turn but the newest, trimmed as the next call will
    start = turns[0].start
    base: Trimmed | None = None
    base_key: Key | None = None
    key: Key | None = None
    done = 0  # turns that come trimmed from ``base``
    if tails is not None and older > 0:
        # The newest turn is never part of a key: its identity is not needed.
        ids = [identity(m) for m in messages[start : turns[older - 1].stop]]

        def key_of(n: int) -> Key:
            return (context.budget, calls_before, messages[start].index,
                    tuple(ids[: turns[n - 1].stop - start]))

        key = key_of(older)
        # This very tail again (a retry), or the last step's (the agent added a turn).
        for n in (older, older - 1):
            probe = key if n == older else key_of(n)
            base = tails.get(probe, messages[start : turns[n - 1].stop]) if n > 0 else None
            if base is not None:
                base_key, done = probe, n
                break
        tails.looked_up(base is not None)
    shown = Shown(context.lines, base.shown if base is not None else frozenset())
    marks = (len(out), len(spans), len(dropped))
    if base is not None:
        sent, cut_spans, cut_before = base.replayed(messages[start : turns[done - 1].stop])
        out.extend(sent)
        spans.extend(cut_spans)
        dropped.extend(cut_before)
    for k in range(done, len(turns)):
        if k == older and tails is not None and key is not None and done < older:
            tails.put(key, Trimmed(tuple(messages[start : turns[k].start]), out[marks[0]:],
                                   tuple(spans[marks[1]:]), dropped[marks[2]:],
                                   shown.lines()),
                      replaces=base_key)
        turn = turns[k]
        region = messages[turn.start : turn.stop]
        kept, cut_spans, cut = trim_turn(region, context, shown, newest=k == older)
        if pays is not None and k < older and any(m.role == "tool" for m in cut):
            # As it went out while it was the newest, what the provider's cache holds: a
            # turn's calls are trimmed the same either way, its results were whole.
            whole = [m if m.role != "tool" else sent for m, sent in zip(kept, region,
                                                                        strict=True)]
            if not pays(k, whole, kept):
                kept = whole
                left = [(s, m) for s, m in zip(cut_spans, cut, strict=True) if m.role != "tool"]
                cut_spans, cut = [s for s, _ in left], [m for _, m in left]
        out.extend(kept)
        spans.extend(cut_spans)
        dropped.extend(cut)


def older_and_recent(messages: Sequence[Message], context: StrategyContext,
                     ) -> tuple[tuple[Turn, ...], tuple[Turn, ...]]:
    """Turns past the tier's window, and the ones it keeps in full: at least the tier's
    turns, and earlier ones too while the window's tokens stay within its budget."""
    turns = context.segments.turns
    budget = context.budget
    start = max(len(turns) - budget.full_turns, 0)
    count = context.tokens
    if count is not None and budget.window_tokens and start > 0:
        used = count(messages[turns[start].start : turns[-1].stop])
        while start > 0:
            turn = turns[start - 1]
            more = count(messages[turn.start : turn.stop])
            if used + more > budget.window_tokens:
                break
            used += more
            start -= 1
    return turns[:start], turns[start:]
