"""Did a tool call fail? Read from the result, since most formats carry no error flag."""

from __future__ import annotations

import re

from app.engine.transcript import Message

# Markers seen in real agent observations: shells, Python, HTTP tools, JSON APIs.
_ERROR_LINE = re.compile(
    r"^(?:Traceback \(most recent call last\)|[\w.]*(?:Error|Exception)\b:?|error[:\[]"
    r"|fatal:|E\s{2,}\w|FAILED\b|.*: command not found|.*No such file or directory"
    r"|.*Permission denied|\{\"error\")",
    re.MULTILINE | re.IGNORECASE,
)
_RETURN_CODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>|exit (?:code|status):? (-?\d+)")


def is_error(message: Message) -> bool:
    if message.is_error:
        return True
    text = message.text
    head = text[:2000]
    code = _RETURN_CODE.search(head)
    if code is not None:
        return (code.group(1) or code.group(2)) != "0"
    return _ERROR_LINE.search(head) is not None


def error_line(message: Message) -> str:
    """The most telling line of a failed result, for ledgers and signals."""
    text = message.text
    found = _ERROR_LINE.search(text[:20000])
    if found is not None:
        start = found.start()
        end = text.find("\n", start)
        line = text[start : end if end >= 0 else len(text)]
    else:
        line = first_line(text)
    return shorten(line.strip(), 200)


def first_line(text: str) -> str:
    """First line with content, skipping bare wrapper tags such as ``<output>``."""
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        if end < 0:
            end = len(text)
        line = text[start:end].strip()
        if line and not (line[0] == "<" and line[-1] == ">" and " " not in line):
            return line
        start = end + 1
    return ""


def shorten(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: max(limit - 1, 0)] + "…"
