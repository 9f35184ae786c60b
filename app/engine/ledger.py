"""The artifact ledger: what the compacted part of a run touched, and its last error."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from app.engine.calls import CallSummaries
from app.engine.outcomes import Outcomes
from app.engine.transcript import Message, ToolCall

_MAX_ITEMS = 12


@dataclass
class Ledger:
    files_read: list[str] = field(default_factory=list)
    files_written: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)
    command_count: int = 0
    last_error: str | None = None

    def __bool__(self) -> bool:
        return bool(self.files_read or self.files_written or self.commands or self.urls
                    or self.last_error)


def _add(items: list[str], value: str) -> None:
    """Append, moving a repeat to the end: the newest use is what matters."""
    if value in items:
        items.remove(value)
    items.append(value)


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
            _add(ledger.files_written, path)
        for command in summary.commands:
            ledger.command_count += 1
            _add(ledger.commands, command)
        for url in summary.urls:
            _add(ledger.urls, url)
        if result is not None:
            outcome = outcomes.of(result)
            if outcome.error:
                ledger.last_error = f"{call.name} -> {outcome.line}"


def joined(ledgers: Iterable[Ledger]) -> Ledger:
    """The ledger of several runs in order: what folding all their calls would give, since
    each list is ordered by last use."""
    out = Ledger()
    for ledger in ledgers:
        for mine, theirs in ((out.files_read, ledger.files_read),
                             (out.files_written, ledger.files_written),
                             (out.commands, ledger.commands), (out.urls, ledger.urls)):
            for item in theirs:
                _add(mine, item)
        out.command_count += ledger.command_count
        out.last_error = ledger.last_error or out.last_error
    return out


def copied(ledger: Ledger) -> Ledger:
    return Ledger(list(ledger.files_read), list(ledger.files_written), list(ledger.commands),
                  list(ledger.urls), ledger.command_count, ledger.last_error)


def recent(items: list[str]) -> tuple[list[str], int]:
    """The newest items worth showing, and how many were left out."""
    return items[-_MAX_ITEMS:], max(len(items) - _MAX_ITEMS, 0)
