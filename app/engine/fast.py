"""The ``fast`` strategy: older turns become compact prior-work notes, recent turns stay.

User and system messages in the older part are kept where they were (they
carry the constraints agents forget); each run of assistant and tool
messages between them becomes one note, unless the note would not be
shorter, and the last note ends with the artifact ledger. Notes are cached by
the run's content: an agent resends the same older runs on every step.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.engine.compaction import (
    HANDLE_CHARS,
    Compaction,
    Span,
    StrategyContext,
    trim_turn,
)
from app.engine.ledger import Ledger, joined, recent
from app.engine.prompts import (
    AGED_LINES,
    LEDGER_HEADER,
    PRIOR_WORK_CONTINUED,
    PRIOR_WORK_FOOTER,
    PRIOR_WORK_HEADER,
    counted,
)
from app.engine.runs import Runs, RunSummary
from app.engine.transcript import Message, Part, Turn


class FastStrategy:
    name = "fast"

    def __init__(self, runs: Runs | None = None) -> None:
        # Summaries of older runs, kept across calls: an agent resends them every step.
        self._runs = runs or Runs()

    def compact(self, messages: Sequence[Message], context: StrategyContext) -> Compaction:
        older, recent_turns = older_and_recent(messages, context)
        out = list(messages[: context.segments.head_stop])
        spans: list[Span] = []
        dropped: list[Message] = []
        if older:
            region = messages[older[0].start : older[-1].stop]
            out.extend(self._notes(region, context, spans, dropped))
        settled = len(dropped)
        for k, turn in enumerate(recent_turns):
            kept, cut_spans, cut = trim_turn(
                messages[turn.start : turn.stop], context,
                keep_results=k == len(recent_turns) - 1,
            )
            out.extend(kept)
            spans.extend(cut_spans)
            dropped.extend(cut)
        return Compaction(tuple(out), tuple(spans), tuple(dropped), settled)

    def _notes(self, region: Sequence[Message], context: StrategyContext,
               spans: list[Span], dropped: list[Message]) -> list[Message]:
        """The older region with each run of work replaced by a note, where that pays."""
        groups: list[Message | list[Message]] = []
        for m in region:
            if m.role not in ("assistant", "tool"):
                groups.append(m)
            elif groups and isinstance(groups[-1], list):
                groups[-1].append(m)
            else:
                groups.append([m])
        out: list[Message] = []
        last_note = -1
        aged = _aged_before(region[-1].index, context.budget.brief_after)
        ledgers: list[Ledger] = []
        for g in groups:
            if isinstance(g, Message):
                out.append(g)
                continue
            run = self._runs.summary(g, context)
            ledgers.append(run.ledger)
            header = PRIOR_WORK_HEADER if not spans else PRIOR_WORK_CONTINUED
            what = counted(run.calls, run.replies)
            # A short reply between two user messages can be shorter than any note
            # about it: keep such a run as it was.
            if run.chars <= len(header) + HANDLE_CHARS + len(what) + run.line_chars:
                out.extend(g)
                continue
            spans.append(Span(run.handle, "compacted", g[0].index, g[-1].index, len(g),
                              run.tools, tuple(g)))
            dropped.extend(g)
            last_note = len(out)
            # One part per line: lines repeat from call to call, so their token counts
            # and facts come from the caches; renderers join parts with newlines.
            footer = Part("text", PRIOR_WORK_FOOTER.format(what=what, handle=run.handle))
            shown = _aged(run, aged) if run.origins and run.origins[0] < aged else run.lines
            out.append(Message("user", (Part("text", header), *shown, footer)))
        ledger = joined(ledgers)
        if last_note >= 0 and ledger:
            note = out[last_note]
            lines = render_ledger(ledger).split("\n")
            out[last_note] = Message("user", (*note.parts, *(Part("text", x) for x in lines)))
        return out


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


# Lines age in steps of this many messages, so an aged part changes once a step and
# stays the same in between: a provider's prompt cache keeps it.
_AGE_STEP = 32
# The ledger's latest commands; the older ones are in the notes' lines.
_COMMANDS_SHOWN = 2


def _aged_before(end: int, brief_after: int) -> int:
    """The transcript index before which note lines take their aged form: ``brief_after``
    messages before the older part's end, rounded down to a step; -1 for none."""
    if not brief_after:
        return -1
    return ((end - brief_after) // _AGE_STEP) * _AGE_STEP


def _aged(run: RunSummary, before: int) -> tuple[Part, ...]:
    """The run's lines, those from before index ``before`` in their aged form: calls
    that neither failed nor wrote are left out, and one line says how many."""
    out: list[Part] = []
    left_out = 0
    for line, brief, origin in zip(run.lines, run.brief, run.origins, strict=True):
        if origin < before:
            if brief is None:
                left_out += 1
            else:
                out.append(brief)
            continue
        if left_out:
            out.append(Part("text", AGED_LINES.format(n=left_out)))
            left_out = 0
        out.append(line)
    if left_out:
        out.append(Part("text", AGED_LINES.format(n=left_out)))
    return tuple(out)


def render_ledger(ledger: Ledger) -> str:
    lines = [LEDGER_HEADER]
    for label, items in (("files read", ledger.files_read),
                         ("files written", ledger.files_written),
                         ("URLs fetched", ledger.urls)):
        if items:
            shown, more = recent(items)
            lines.append(f"- {label}: {', '.join(shown)}" + (f" (+{more} more)" if more else ""))
    if ledger.commands:
        # A line per command, indented: an agent adds a command a step, and lines that
        # stay the same from call to call are counted once (each line is a part of the
        # note). On its own line a command needs no quotes, which saves their tokens.
        shown, _ = recent(ledger.commands)
        lines.append(f"- commands run ({ledger.command_count}), latest last:")
        lines.extend(f"  {c}" for c in shown[-_COMMANDS_SHOWN:])
    if ledger.last_error:
        lines.append(f"- last error: {ledger.last_error}")
    return "\n".join(lines)

