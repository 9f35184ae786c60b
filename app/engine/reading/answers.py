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

from app.engine.reading.outcomes import ELLIPSIS, shorten

# What a JSON answer's fields get at least, in a note or cut in the recent turns.
JSON_CHARS = 320
# A JSON object's line: its first fields, and no long text.
_MAX_FIELDS = 8
_MAX_VALUE = 60
# A list of at least this many objects is shown as a table, of at most this many columns.
_TABLE_ROWS = 3
_MAX_COLUMNS = 8
# A line of a table or of an object's fields, past which it is shortened.
_ROW_CHARS = 320


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
            out[key] = f"[{len(value)}]"
    return out


def _table(items: list[dict[str, Any]], label: str, out: list[str]) -> None:
    """Like objects as a table: the names of the fields that differ, a row of their
    values per object, then the fields all share on one line."""
    rows = [_flat(item) for item in items]
    keys = list(dict.fromkeys(k for row in rows for k in row))
    first = rows[0]
    same = [k for k in keys if all(row.get(k) == first.get(k) for row in rows)]
    columns = [k for k in keys if k not in same][:_MAX_COLUMNS]
    if columns:
        out.append(f"{label}{len(rows)} rows: " + " | ".join(columns))
        out.extend(" | ".join(row.get(k, "-") for k in columns) for row in rows)
    if same:  # after the rows: the call's own arguments often say as much
        out.append(f"{label}all {len(rows)}: " + ", ".join(f"{k}={first[k]}" for k in same))


def _rows(value: Any, label: str, out: list[str], depth: int = 0) -> None:
    """A line per object, nested lists of objects below their parent."""
    if depth > 3:
        return
    if isinstance(value, list) and len(value) >= _TABLE_ROWS \
            and all(isinstance(item, dict) and item for item in value):
        _table(value, label, out)
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


def json_value(text: str) -> Any:
    """The object or list a JSON result holds; None if it holds none (not JSON, or a
    lone scalar, which reads as well as text)."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return None
    try:
        return json.loads(stripped)
    except ValueError:
        return None


def json_lines(text: str, limit: int) -> list[str] | None:
    """A JSON result as lines of its objects' scalar fields; None if it is not JSON."""
    value = json_value(text)
    if value is None:
        return None
    rows: list[str] = []
    _rows(value, "", rows)
    out: list[str] = []
    used = 0
    for row in rows:
        shown = shorten(row, _ROW_CHARS)
        if used + len(shown) > limit:
            out.append(f"{ELLIPSIS} {len(rows) - len(out)} more")
            break
        out.append(shown)
        used += len(shown) + 1
    return out
