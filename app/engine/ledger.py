"""The artifact ledger: what the compacted part of a run touched, and its last error."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from app.engine.calls import CallSummaries
from app.engine.outcomes import Outcomes
from app.engine.transcript import Message, ToolCall

_MAX_ITEMS = 12


@dataclass(slots=True)
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
                ledger.last_error = f"{call.name} → {outcome.line}"
    return ledger


def recent(items: list[str]) -> tuple[list[str], int]:
    """The newest items worth showing, and how many were left out."""
    return items[-_MAX_ITEMS:], max(len(items) - _MAX_ITEMS, 0)
