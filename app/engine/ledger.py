"""The artifact ledger: what the compacted part of a run touched.

Read from tool names and arguments, including file names inside shell
commands, because coding agents do most of their work through ``bash``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from app.engine.memo import Memo
from app.engine.outcomes import error_line, is_error, shorten
from app.engine.transcript import Message, ToolCall

_PATH_KEYS = ("path", "file", "file_path", "filepath", "filename", "target_file", "directory")
_COMMAND_KEYS = ("command", "cmd", "script")
_WRITE_TOOL = re.compile(r"write|create|edit|save|insert|replace|patch|append|delete|remove"
                         r"|move|rename|update", re.IGNORECASE)
_URL = re.compile(r"https?://[^\s\"'<>)]+")
_FILE = r"((?:\.{0,2}/)?[\w.@/-]*\w\.\w{1,5})"
_SHELL_WRITE = re.compile(r"(?:>>?|\btee(?:\s+-a)?|sed\s+-i\S*\s+(?:'[^']*'|\"[^\"]*\"|\S+))\s*"
                          + _FILE)
_SHELL_READ = re.compile(r"\b(?:cat|head|tail|nl|less|sed\s+-n\s+(?:'[^']*'|\S+)|grep\s+[^|;&]*?)"
                         r"\s+(?:-\S+\s+)*" + _FILE)
_MAX_ITEMS = 12
_SHELL_SCAN_CHARS = 400


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


@dataclass(frozen=True, slots=True)
class CallRecord:
    """What one call touched; memoized, since calls come back on every step."""

    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    urls: tuple[str, ...] = ()


def _add(items: list[str], value: str) -> None:
    if value in items:
        items.remove(value)
    items.append(value)


def _arguments(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def record(key: str) -> CallRecord:
    """``key`` is the tool name, a NUL, then the arguments."""
    name, _, arguments = key.partition("\0")
    args = _arguments(arguments) if arguments else {}
    reads: list[str] = []
    writes: list[str] = []
    commands: list[str] = []
    writing = _WRITE_TOOL.search(name) is not None
    for k in _PATH_KEYS:
        value = args.get(k)
        if isinstance(value, str) and value:
            (writes if writing else reads).append(value)
    for k in _COMMAND_KEYS:
        value = args.get(k)
        if isinstance(value, str) and value:
            commands.append(shorten(" ".join(value.split()), 100))
            # The first line names the files; what follows is usually a heredoc body.
            line = value.split("\n", 1)[0][:_SHELL_SCAN_CHARS]
            writes.extend(_SHELL_WRITE.findall(line))
            reads.extend(p for p in _SHELL_READ.findall(line) if p not in writes)
    urls = [u for v in args.values() if isinstance(v, str) and "http" in v
            for u in _URL.findall(v)]
    return CallRecord(tuple(reads), tuple(writes), tuple(commands), tuple(urls))


class LedgerBuilder:
    def __init__(self, *, cache_chars: int = 8_000_000) -> None:
        self._records: Memo[CallRecord] = Memo(cache_chars)

    def build(self, pairs: Iterable[tuple[ToolCall, Message | None]]) -> Ledger:
        ledger = Ledger()
        for call, result in pairs:
            rec = self._records.get(f"{call.name}\0{call.arguments}", record)
            for path in rec.reads:
                _add(ledger.files_read, path)
            for path in rec.writes:
                _add(ledger.files_written, path)
            for command in rec.commands:
                ledger.command_count += 1
                _add(ledger.commands, command)
            for url in rec.urls:
                _add(ledger.urls, url)
            if result is not None and is_error(result):
                ledger.last_error = f"{call.name} → {error_line(result)}"
        return ledger


def recent(items: list[str]) -> tuple[list[str], int]:
    """The newest items worth showing, and how many were left out."""
    return items[-_MAX_ITEMS:], max(len(items) - _MAX_ITEMS, 0)
