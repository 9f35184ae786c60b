"""Prior-work notes: an older region with each run of work replaced by its note.

User and system messages in the region stay where they were (they carry the
constraints agents forget); each run of assistant and tool messages between
them becomes one note, unless the note would not be shorter in tokens. Notes are
cached by the run's content: an agent resends the same older runs on every step. Lines
older than the tier's age take their aged form (reads left out, failures,
writes and the agent's words kept). The artifact ledger is rendered here and
placed by the strategy.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.engine.compaction.base import HANDLE_CHARS, Span, StrategyContext, wire_range
from app.engine.compaction.ledger import Ledger, changed_and_created, recent
from app.engine.compaction.runs import Runs, RunSummary
from app.engine.memo import CacheUsage
from app.engine.prompts import (
    AGED_LINES,
    LEDGER_HEADER,
    PRIOR_WORK_CONTINUED,
    PRIOR_WORK_FOOTER,
    PRIOR_WORK_HEADER,
    counted,
)
from app.engine.transcript.model import Message, Part

# Lines age in steps of this many messages, so an aged part changes once a step and
# stays the same in between: a provider's prompt cache keeps it.
_AGE_STEP = 32
# The ledger's latest commands; the older ones are in the notes' lines.
_COMMANDS_SHOWN = 2
# Every line of a run takes its aged form.
ALL_AGED = 1 << 62


class Written:
    """What writing notes for a region gave: its messages, spans, dropped originals and
    the runs' ledgers (in order). A plain class, not a dataclass: compiled, its
    ``__init__`` is native, where a dataclass's is generated Python, run every call."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.spans: list[Span] = []
        self.dropped: list[Message] = []
        self.ledgers: list[Ledger] = []
        self.last_note = -1  # index in ``messages`` of the last note, -1 for none


class Notes:
    def __init__(self, runs: Runs | None = None) -> None:
        # Summaries of older runs, kept across calls: an agent resends them every step.
        self._runs = runs or Runs()

    @property
    def usage(self) -> CacheUsage:
        return self._runs.usage

    def write(self, region: Sequence[Message], context: StrategyContext, *,
              aged_before: int, first: bool) -> Written:
        """``region`` with each run of work replaced by a note, where that pays. Lines
        from before transcript index ``aged_before`` take their aged form; ``first``
        says whether the first note opens the notes (its header says so)."""
        out = Written()
        for g in groups(region):
            if isinstance(g, Message):
                out.messages.append(g)
                continue
            # Every line older than the age: only the aged form of the run is needed.
            run = self._runs.summary(g, context, aged=g[-1].index < aged_before)
            out.ledgers.append(run.ledger)
            header = PRIOR_WORK_HEADER if first and not out.spans else PRIOR_WORK_CONTINUED
            what = counted(run.calls, run.replies)
            shown = _aged(run, aged_before) if run.origins and run.origins[0] < aged_before \
                else run.lines
            # A short reply between two user messages can be shorter than any note
            # about it: keep such a run as it was.
            if run.chars <= len(header) + HANDLE_CHARS + len(what) + \
                    sum([len(p.text) for p in shown]):
                out.messages.extend(g)
                continue
            # One part per line: lines repeat from call to call, so their token counts
            # and facts come from the caches; renderers join parts with newlines.
            footer = Part("text", PRIOR_WORK_FOOTER.format(what=what, handle=run.handle))
            note = Message("user", (Part("text", header), *shown, footer))
            # Shorter in characters is not enough: the header, the footer and the
            # handle's digits are dense in tokens (a 34-token reply made a 42-token note).
            count = context.tokens
            if count is not None and count([note]) >= count(g):
                out.messages.extend(g)
                continue
            begins, ends = wire_range(g)
            out.spans.append(Span(run.handle, "compacted", begins, ends, len(g), run.tools,
                                  tuple(g)))
            out.dropped.extend(g)
            out.last_note = len(out.messages)
            out.messages.append(note)
        return out


def groups(region: Sequence[Message]) -> list[Message | list[Message]]:
    """The region's user and system messages, and the runs of work between them."""
    groups: list[Message | list[Message]] = []
    for m in region:
        if m.role not in ("assistant", "tool"):
            groups.append(m)
        elif groups and isinstance(groups[-1], list):
            groups[-1].append(m)
        else:
            groups.append([m])
    return groups


def aged_before(end: int, brief_after: int) -> int:
    """The transcript index before which note lines take their aged form: ``brief_after``
    messages before ``end``, rounded down to a step; -1 for none."""
    if not brief_after:
        return -1
    return ((end - brief_after) // _AGE_STEP) * _AGE_STEP


def _aged(run: RunSummary, before: int) -> tuple[Part, ...]:
    """The run's lines, those from before index ``before`` in their aged form: calls
    that neither failed nor wrote are left out, and one line says how many."""
    out: list[Part] = []
    left_out = 0
    for i, (brief, origin) in enumerate(zip(run.brief, run.origins, strict=True)):
        if origin < before:
            if brief is None:
                left_out += 1
            else:
                out.append(brief)
            continue
        if left_out:
            out.append(Part("text", AGED_LINES.format(n=left_out)))
            left_out = 0
        out.append(run.lines[i])  # a run with lines this new was summarized whole
    if left_out:
        out.append(Part("text", AGED_LINES.format(n=left_out)))
    return tuple(out)


def with_ledger(note: Message, ledger: Ledger) -> Message:
    """``note`` with the ledger's lines after its own."""
    lines = render_ledger(ledger).split("\n")
    return Message(note.role, (*note.parts, *(Part("text", x) for x in lines)))


def render_ledger(ledger: Ledger, *, reads: bool = True) -> str:
    """The ledger's lines; without ``reads``, the files read and commands run are left
    out (the notes' lines name them, and the eval finds them little used from here)."""
    lines = [LEDGER_HEADER]
    changed, created = changed_and_created(ledger)
    for label, items in (("files read", ledger.files_read if reads else {}),
                         ("files changed", changed),
                         ("files created", created),
                         ("URLs fetched", ledger.urls)):
        if items:
            shown, more = recent(items)
            lines.append(f"- {label}: {', '.join(shown)}" + (f" (+{more} more)" if more else ""))
    if ledger.commands and reads:
        # A line per command, indented: an agent adds a command a step, and lines that
        # stay the same from call to call are counted once (each line is a part of the
        # note). On its own line a command needs no quotes, which saves their tokens.
        shown, _ = recent(ledger.commands)
        lines.append(f"- commands run ({ledger.command_count}), latest last:")
        lines.extend(f"  {c}" for c in shown[-_COMMANDS_SHOWN:])
    if ledger.last_error:
        lines.append(f"- last error: {ledger.last_error}")
    return "\n".join(lines)
