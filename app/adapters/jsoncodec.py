"""JSON in and out, with orjson where it keeps what was sent, else the standard library.

orjson is several times faster, and strict: it refuses NaN, Infinity and lone
surrogates, and reads integers past 64 bits as floats, which would change what a
caller sent. Bodies it refuses or would change are read by the standard parser;
values it cannot write are written by the standard encoder, escaped to ASCII.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

# A body with a run of this many digits may hold an integer past 64 bits. Digits
# become "0" and everything else a space, so the run is found by a substring search
# in C, where a regex would look at every byte in Python's engine.
_LONG_DIGITS = b"0" * 19
_DIGITS_ONLY = bytes(48 if 48 <= b <= 57 else 32 for b in range(256))


class Unread:
    """What ``loads_fast`` returns for a body the standard parser must read."""


UNREAD = Unread()


def loads_fast(body: bytes) -> Any:
    """The body as orjson reads it, or UNREAD."""
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return UNREAD
    # A long run of digits is mostly inside a string (an id, a hash, a big number in a
    # tool's output), which orjson keeps as it is. Only a number can have lost digits, and
    # orjson reads such an integer as a float: with no float in the value, nothing changed.
    if body.translate(_DIGITS_ONLY).find(_LONG_DIGITS) >= 0 and _has_float(value):
        return UNREAD
    return value


def _has_float(value: Any) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, dict):
        return any(_has_float(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_float(v) for v in value)
    return False


def loads(body: bytes) -> Any:
    """The body as the standard parser would read it (NaN and Infinity too), fast when
    orjson reads it the same."""
    found = loads_fast(body)
    return json.loads(body) if isinstance(found, Unread) else found


def dumps(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:
        return json.dumps(value, separators=(",", ":")).encode()
