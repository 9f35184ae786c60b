"""The artifact ledger: what the compacted part of a run touched, and its last error."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass

from app.engine.reading.calls import CallSummaries, CallSummary
from app.engine.reading.outcomes import Outcomes
from app.engine.transcript.model import Message, ToolCall

_MAX_ITEMS = 12


# Items in order of last use: a dict is an ordered set whose "move to the end" is O(1),
# where a list's is a scan; runs with hundreds of commands are merged on every call.
Items = dict[str, None]


@dataclass(init=False)  # made per call: __init__ written out, see transcript.Message
class Ledger:
    files_read: Items
    files_written: Items
    commands: Items
    urls: Items
    command_count: int
    last_error: str | None
    # Files first met being written, not read: the ones the agent created, as against
    # the files it changed (a subset of files_written).
    files_created: Items
    # What the last error's call touched (its commands and files, else its tool), and
    # what every call that succeeded touched: an error whose command or file later
    # succeeded was fixed, and "last error" would send the agent back to it.
    error_subjects: frozenset[str]
    succeeded: set[str]

    def __init__(self, files_read: Items | None = None, files_written: Items | None = None,
                 commands: Items | None = None, urls: Items | None = None,
                 command_count: int = 0, last_error: str | None = None,
                 files_created: Items | None = None,
                 error_subjects: frozenset[str] = frozenset(),
                 succeeded: set[str] | None = None) -> None:
        self.files_read = {} if files_read is None else files_read
        self.files_written = {} if files_written is None else files_written
        self.commands = {} if commands is None else commands
        self.urls = {} if urls is None else urls
        self.command_count = command_count
        self.last_error = last_error
        self.files_created = {} if files_created is None else files_created
        self.error_subjects = error_subjects
        self.succeeded = set() if succeeded is None else succeeded

    def __bool__(self) -> bool:
        return bool(self.files_read or self.files_written or self.commands or self.urls
                    or self.last_error)


def _add(items: Items, value: str) -> None:
    """Add at the end, moving a repeat there: the newest use is what matters."""
    items.pop(value, None)
    items[value] = None


def build_ledger(
    pairs: Iterable[tuple[ToolCall, Message | None]], calls: CallSummaries, outcomes: Outcomes
) -> Ledger:
    ledger = Ledger()
    extend_ledger(ledger, pairs, calls, outcomes)
    return ledger


def extend_ledger(ledger: Ledger, pairs: Iterable[tuple[ToolCall, Message | None]],
                  calls: CallSummaries, outcomes: Outcomes) -> None:
    """Fold more calls into ``ledger``, in order."""
    for call, result in pairs:
        summary = calls.of(call)
        for path in summary.reads:
            _add(ledger.files_read, path)
        for path in summary.writes:
            if path not in ledger.files_read and path not in ledger.files_written \
                    and path not in summary.edits:
                ledger.files_created[path] = None
            _add(ledger.files_written, path)
        for command in summary.commands:
            ledger.command_count += 1
            _add(ledger.commands, command)
        for url in summary.urls:
            _add(ledger.urls, url)
        if result is not None:
            subjects = subjects_of(call, summary)
            outcome = outcomes.of(result)
            if outcome.error:
                ledger.last_error = f"{call.name} -> {outcome.line}"
                ledger.error_subjects = subjects
            else:
                ledger.succeeded.update(subjects)
                if ledger.error_subjects & subjects:
                    ledger.last_error, ledger.error_subjects = None, frozenset()


def subjects_of(call: ToolCall, summary: CallSummary) -> frozenset[str]:
    """What a call touched, to tell a later success of the same thing: its commands and
    files, else its tool."""
    return frozenset((*summary.commands, *summary.writes, *summary.reads) or (call.name,))


def joined(ledgers: Iterable[Ledger]) -> Ledger:
    """The ledger of several runs in order: what folding all their calls would give, since
    each list is ordered by last use."""
    out = Ledger()
    for ledger in ledgers:
        for path in ledger.files_created:
            if path not in out.files_read and path not in out.files_written:
                out.files_created[path] = None
        for mine, theirs in ((out.files_read, ledger.files_read),
                             (out.files_written, ledger.files_written),
                             (out.commands, ledger.commands), (out.urls, ledger.urls)):
            for item in theirs:
                _add(mine, item)
        out.command_count += ledger.command_count
        if out.error_subjects & ledger.succeeded:
            out.last_error, out.error_subjects = None, frozenset()  # fixed since
        if ledger.last_error:
            out.last_error, out.error_subjects = ledger.last_error, ledger.error_subjects
        out.succeeded |= ledger.succeeded
    return out


def copied(ledger: Ledger) -> Ledger:
    return Ledger(dict(ledger.files_read), dict(ledger.files_written), dict(ledger.commands),
                  dict(ledger.urls), ledger.command_count, ledger.last_error,
                  dict(ledger.files_created), ledger.error_subjects, set(ledger.succeeded))


def changed_and_created(ledger: Ledger) -> tuple[Items, Items]:
    """The files written, in order of last write, split into the ones that were there
    before (read first, or edited in place: the project's files the agent changed) and
    the ones it created (its scripts, tests and copies)."""
    changed: Items = {}
    created: Items = {}
    for path in ledger.files_written:
        (created if path in ledger.files_created else changed)[path] = None
    return changed, created


def recent(items: Items) -> tuple[list[str], int]:
    """The newest items worth showing, oldest first, and how many were left out."""
    newest = list(itertools.islice(reversed(items), _MAX_ITEMS))
    newest.reverse()
    return newest, max(len(items) - _MAX_ITEMS, 0)
