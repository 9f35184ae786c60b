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


class LedgerBuilder:
    def __init__(self, *, cache_chars: int = 8_000_000) -> None:
        self._args: Memo[dict[str, Any]] = Memo(cache_chars)

    def build(self, pairs: Iterable[tuple[ToolCall, Message | None]]) -> Ledger:
        ledger = Ledger()
        for call, result in pairs:
            self._record(ledger, call)
            if result is not None and is_error(result):
                ledger.last_error = f"{call.name} → {error_line(result)}"
        return ledger

    def _record(self, ledger: Ledger, call: ToolCall) -> None:
        args = self._args.get(call.arguments, _arguments) if call.arguments else {}
        writes = _WRITE_TOOL.search(call.name) is not None
        for key in _PATH_KEYS:
            value = args.get(key)
            if isinstance(value, str) and value:
                _add(ledger.files_written if writes else ledger.files_read, value)
        for key in _COMMAND_KEYS:
            value = args.get(key)
            if isinstance(value, str) and value:
                ledger.command_count += 1
                _add(ledger.commands, shorten(" ".join(value.split()), 100))
                self._shell_files(ledger, value)
        for value in args.values():
            if isinstance(value, str) and "http" in value:
                for url in _URL.findall(value):
                    _add(ledger.urls, url)

    @staticmethod
    def _shell_files(ledger: Ledger, command: str) -> None:
        # The first line names the files; what follows is usually a heredoc body.
        command = command.split("\n", 1)[0][:_SHELL_SCAN_CHARS]
        for path in _SHELL_WRITE.findall(command):
            _add(ledger.files_written, path)
        for path in _SHELL_READ.findall(command):
            if path not in ledger.files_written:
                _add(ledger.files_read, path)


def recent(items: list[str]) -> tuple[list[str], int]:
    """The newest items worth showing, and how many were left out."""
    return items[-_MAX_ITEMS:], max(len(items) - _MAX_ITEMS, 0)
