"""The lines of a result worth keeping once the result itself is dropped.

A result's first line rarely holds what an agent goes on to use: the value in
the middle of a config dump, the id in an API answer, the line a grep found.
``salient`` picks, within a budget, the lines that carry facts (identifiers,
paths, numbers with units, ``key: value`` pairs), preferring lines unlike their
neighbours, so a listing of fifty similar rows gives its odd one out rather
than its first three. JSON answers are read as data instead: each object
becomes one line of its scalar fields (``flight_number=HAT017, price=140``),
long text values left out.
"""

from __future__ import annotations

import json
import re
from typing import Any

from app.engine.outcomes import ELLIPSIS, shorten

_LINE_CHARS = 160
_FACT = re.compile(r"\b[A-Za-z_]+\d\w*|\d[\d,.:]*\d|\b\w+_\w+\b|[\w.-]+/[\w./-]+"
                   r"|\b[A-Z]{2,}\w*\b|\b\w+\.\w{1,8}\b")
_KEY_VALUE = re.compile(r"^\s*[\w .-]{1,40}[:=]\s*\S")
_DEFINITION = re.compile(r"^\s*(?:async\s+)?(?:def|class|function|func|fn)\s+\w")
_NOISE = re.compile(r"^[\s\W_]*$")
_LETTERS = re.compile(r"[A-Za-z]+")
_DIGITS = re.compile(r"\d+")
_MAX_FIELDS = 8
_MAX_VALUE = 60


def _score(line: str) -> int:
    facts = len(_FACT.findall(line))
    if not facts:
        return 0  # a line with no identifier, path or number holds no fact to keep
    score = 2 * facts
    if _KEY_VALUE.match(line):
        score += 2
    if _DEFINITION.match(line):  # where code is defined, a listing's landmarks
        score += 6
    return score


def _shape(line: str) -> str:
    """A line as runs of letters, digits and the rest: the rows of one listing share a
    shape (``replica_18: 7352 quota ok`` and ``cursor_19: 7534 invoice ok``)."""
    return _DIGITS.sub("9", _LETTERS.sub("a", line.strip()))[:40]


def text_lines(text: str, limit: int, skip: str = "") -> list[str]:
    """Up to ``limit`` characters of the lines of ``text`` that carry the most facts, in
    their order. ``skip`` (the line the note shows already) is not repeated."""
    lines = [line.strip() for line in text.splitlines()]
    candidates = [(i, line) for i, line in enumerate(lines)
                  if line and line != skip and not _NOISE.match(line)]
    if not candidates:
        return []
    shapes: dict[str, int] = {}
    for _, line in candidates:
        shape = _shape(line)
        shapes[shape] = shapes.get(shape, 0) + 1
    # A line of a rare shape says more than the fiftieth row of a listing.
    ranked = sorted(candidates, key=lambda c: (-(_score(c[1]) * 2 // shapes[_shape(c[1])]
                                                 + _score(c[1])), c[0]))
    chosen: list[tuple[int, str]] = []
    used = 0
    for i, line in ranked:
        if _score(line) == 0:
            break
        shown = shorten(line, _LINE_CHARS)
        if used + len(shown) > limit:
            continue
        chosen.append((i, shown))
        used += len(shown) + 1
    return [line for _, line in sorted(chosen)]


def _scalar(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str) and len(value) <= _MAX_VALUE:
        return value
    return None


def _fields(item: dict[str, Any]) -> str:
    shown = []
    for key, value in item.items():
        scalar = _scalar(value)
        if scalar is not None:
            shown.append(f"{key}={scalar}")
        elif isinstance(value, list) and value:
            shown.append(f"{key}=[{len(value)}]")
        if len(shown) >= _MAX_FIELDS:
            break
    return ", ".join(shown)


def _rows(value: Any, label: str, out: list[str], depth: int = 0) -> None:
    """A line per object, nested lists of objects below their parent."""
    if depth > 3:
        return
    if isinstance(value, dict):
        fields = _fields(value)
        if fields:
            out.append(f"{label}{fields}" if label else fields)
        for key, inner in value.items():
            if isinstance(inner, (list, dict)) and inner and _scalar(inner) is None:
                _rows(inner, f"{key}: ", out, depth + 1)
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, (dict, list)):
                _rows(item, label, out, depth + 1)
        scalars = [s for s in map(_scalar, value) if s is not None]
        if scalars:
            out.append(f"{label}{', '.join(scalars)}")


def json_lines(text: str, limit: int) -> list[str] | None:
    """A JSON result as lines of its objects' scalar fields; None if it is not JSON."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return None
    try:
        value = json.loads(stripped)
    except ValueError:
        return None
    rows: list[str] = []
    _rows(value, "", rows)
    out: list[str] = []
    used = 0
    for row in rows:
        shown = shorten(row, _LINE_CHARS * 2)
        if used + len(shown) > limit:
            out.append(f"{ELLIPSIS} {len(rows) - len(out)} more")
            break
        out.append(shown)
        used += len(shown) + 1
    return out


def salient(text: str, limit: int, skip: str = "") -> list[str]:
    """The lines of a dropped result to keep in a note, within ``limit`` characters."""
    as_json = json_lines(text, limit)
    if as_json is not None:
        return as_json
    return text_lines(text, limit, skip)
