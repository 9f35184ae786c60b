"""JSON answers read as data: the lines of their objects' fields.

An API's answer says its facts in its values, not in its first characters.
Each object becomes one line of its scalar fields (``flight_number=HAT017,
price=140``), long text values left out; a list of like objects becomes a table,
the fields every row shares said once and a column per field that differs, so a
search's eighth flight fits where its first alone did. Notes show an answer so,
and so do the recent turns once a newer turn follows it.
"""

from __future__ import annotations

import json
from typing import Any

from app.engine import jsontext
from app.engine.reading.outcomes import ELLIPSIS, shorten

# What a JSON answer's fields get at least, in a note or cut in the recent turns. A
# support agent's records (a customer's profile with its payment methods and bookings)
# are what the conversation goes on to name: on the tune split, 320 characters kept the
# profile's first lines only (tau-bench 2.7 points under its window line, 4.5 above at
# 480; 600 and 720 gain 0.6 and 2 more for 0.1 and 0.3 points of reduction overall).
JSON_CHARS = 480
# A JSON object's line: its first fields, and no long text.
_MAX_FIELDS = 8
_MAX_VALUE = 60
# A list of at least this many objects is shown as a table, of at most this many columns.
_TABLE_ROWS = 3
_MAX_COLUMNS = 8
# A line of a table or of an object's fields, past which it is shortened.
_ROW_CHARS = 320
# A list of scalars shown whole on its object's line: items and the whole at most.
_MAX_ITEM = 40
_MAX_LIST = 160


def _scalar(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str) and len(value) <= _MAX_VALUE:
        return value
    return None


def _listed(value: list[Any]) -> str | None:
    """A short list of scalars whole (a customer's reservation ids, a card's last
    digits): the ids are what the conversation goes on to name, and ``[7]`` says only
    how many there were. None for a list of objects, or one too long for a line."""
    shown: list[str] = []
    for v in value:
        scalar = _scalar(v)
        if scalar is None or len(scalar) > _MAX_ITEM:
            return None
        shown.append(scalar)
    joined = f"[{', '.join(shown)}]"
    return joined if shown and len(joined) <= _MAX_LIST else None


def _fields(item: dict[str, Any]) -> str:
    shown = []
    for key, value in item.items():
        scalar = _scalar(value)
        if scalar is not None:
            shown.append(f"{key}={scalar}")
        elif isinstance(value, list) and value:
            shown.append(f"{key}={_listed(value) or f'[{len(value)}]'}")
        if len(shown) >= _MAX_FIELDS:
            break
    return ", ".join(shown)


def _flat(item: dict[str, Any]) -> dict[str, str]:
    """An object's scalar fields, with those of the objects inside it as ``key.field``."""
    out: dict[str, str] = {}
    for key, value in item.items():
        scalar = _scalar(value)
        if scalar is not None:
            out[key] = scalar
        elif isinstance(value, dict):
            for inner, v in value.items():
                inner_scalar = _scalar(v)
                if inner_scalar is not None:
                    out[f"{key}.{inner}"] = inner_scalar
        elif isinstance(value, list) and value:
            out[key] = _listed(value) or f"[{len(value)}]"
    return out


def _keyed(value: dict[str, Any]) -> list[dict[str, Any]] | None:
    """A dict of like objects keyed by an id (a customer's payment methods by method id),
    as the list of those objects, each with its key when it does not say it already;
    None for any other dict."""
    if len(value) < _TABLE_ROWS or not all(isinstance(v, dict) and v for v in value.values()):
        return None
    return [v if key in v.values() else {"key": key, **v} for key, v in value.items()]


class _Lines:
    """What an answer's rows become: the lines, which of them are a table's header or
    shared fields (``meta``: not rows of their own), and each table row's header."""

    def __init__(self) -> None:
        self.out: list[str] = []
        self.meta: set[int] = set()
        self.headers: dict[int, str] = {}

    def add_meta(self, line: str) -> None:
        self.meta.add(len(self.out))
        self.out.append(line)


def _table(items: list[dict[str, Any]], label: str, lines: _Lines) -> None:
    """Like objects as a table: the names of the fields that differ, a row of their
    values per object, then the fields all share on one line (those two lines are
    meta: they are not rows of their own)."""
    rows = [_flat(item) for item in items]
    keys = list(dict.fromkeys(k for row in rows for k in row))
    first = rows[0]
    same = [k for k in keys if all(row.get(k) == first.get(k) for row in rows)]
    columns = [k for k in keys if k not in same][:_MAX_COLUMNS]
    if columns:
        header = f"{label}{len(rows)} rows: " + " | ".join(columns)
        lines.add_meta(header)
        for row in rows:
            lines.headers[len(lines.out)] = header
            lines.out.append(" | ".join(row.get(k, "-") for k in columns))
    if same:  # after the rows: the call's own arguments often say as much
        lines.add_meta(f"{label}all {len(rows)}: "
                       + ", ".join(f"{k}={first[k]}" for k in same))


def _rows(value: Any, label: str, lines: _Lines, depth: int = 0) -> None:
    """A line per object, nested lists of objects below their parent."""
    if depth > 3:
        return
    if isinstance(value, list) and len(value) >= _TABLE_ROWS \
            and all(isinstance(item, dict) and item for item in value):
        _table(value, label, lines)
        return
    if isinstance(value, dict):
        keyed = _keyed(value)
        if keyed is not None:
            _table(keyed, label, lines)
            return
        fields = _fields(value)
        if fields:
            lines.out.append(f"{label}{fields}" if label else fields)
        for key, inner in value.items():
            if isinstance(inner, list) and _listed(inner) is not None:
                continue  # whole on the fields' line already
            if isinstance(inner, (list, dict)) and inner and _scalar(inner) is None:
                _rows(inner, f"{key}: ", lines, depth + 1)
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, (dict, list)):
                _rows(item, label, lines, depth + 1)
        scalars = [s for s in map(_scalar, value) if s is not None]
        if scalars:
            lines.out.append(f"{label}{', '.join(scalars)}")


def json_value(text: str) -> Any:
    """The object or list a JSON result holds; None if it holds none (not JSON, or a
    lone scalar, which reads as well as text)."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return None
    try:
        return jsontext.loads(stripped)
    except ValueError:
        return None


def json_lines(text: str, limit: int) -> list[str] | None:
    """A JSON result as lines of its objects' scalar fields; None if it is not JSON."""
    value = json_value(text)
    if value is None:
        return None
    lines = _Lines()
    _rows(value, "", lines)
    rows, meta = lines.out, lines.meta
    out: list[str] = []
    used = 0
    for i, row in enumerate(rows):
        shown = shorten(row, _ROW_CHARS)
        if used + len(shown) > limit:
            # What is left, counted as rows and records: a table's header and its line of
            # shared fields are not rows (a customer's six payment methods with one shown
            # are five more).
            left = sum(1 for j in range(i, len(rows)) if j not in meta)
            out.append(f"{ELLIPSIS} {left} more" if left else f"{ELLIPSIS} shared fields")
            break
        out.append(shown)
        used += len(shown) + 1
    return out


def record_rows(value: Any) -> list[tuple[str, str]]:
    """Each record an answer holds as a line, with the header of its table (empty for
    an object's own line): what a later request may name by a field's value."""
    lines = _Lines()
    _rows(value, "", lines)
    return [(lines.headers.get(i, ""), shorten(line, _ROW_CHARS))
            for i, line in enumerate(lines.out) if i not in lines.meta]
