"""JSON in and out, with orjson where it keeps what was sent, else the standard library.

orjson is several times faster, and strict: it refuses NaN, Infinity and lone
surrogates, and reads integers past 64 bits as floats, which would change what a
caller sent. Bodies it refuses or would change are read by the standard parser;
values it cannot write are written by the standard encoder, escaped to ASCII.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import orjson

from app.engine.errors import NestedTooDeep
from app.engine.jsontext import deeper_than
from app.engine.transcript.formats.numbers import holds_float

# A body with a run of this many digits may hold an integer past 64 bits. Digits
# become "0" and everything else a space, so the run is found by a substring search
# in C, where a regex would look at every byte in Python's engine.
_LONG_DIGITS = b"0" * 19
_DIGITS_ONLY = bytes(48 if 48 <= b <= 57 else 32 for b in range(256))


class Unread:
    """What ``loads_fast`` returns for a body the standard parser must read."""


UNREAD = Unread()


def loads_fast(body: bytes, max_depth: int | None = None) -> Any:
    """The body as orjson reads it, or UNREAD; NestedTooDeep past ``max_depth``."""
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return UNREAD
    return checked(body, value, max_depth)


def checked(body: bytes, value: Any, max_depth: int | None) -> Any:
    """``value``, parsed by orjson from ``body``, or UNREAD where orjson may have changed
    what was sent; NestedTooDeep past ``max_depth``."""
    if max_depth is not None:
        check_depth(body, value, max_depth)
    return UNREAD if orjson_changed(body, value) else value


def orjson_changed(body: bytes, value: Any, start: int = 0, end: int | None = None) -> bool:
    """Whether orjson may have read ``body[start:end]`` as other than ``value``: it reads
    an integer past 64 bits as a float. With no float in the value, nothing changed
    (and nothing is copied). With one, a body with no long run of digits has no such
    integer either (a run inside a string, an id or a hash, is kept as it is, and only
    costs this check)."""
    return holds_float(value) and \
        body[start:end].translate(_DIGITS_ONLY).find(_LONG_DIGITS) >= 0


def check_depth(body: bytes, value: Any, limit: int) -> None:
    """Raise NestedTooDeep when ``value`` (parsed from ``body``) nests past ``limit``.
    Every level opens a bracket: a body with no more brackets than the limit is not
    walked (counting them in C costs a few microseconds per 100 KB)."""
    if body.count(b"[") + body.count(b"{") > limit and deeper_than(value, limit):
        raise NestedTooDeep(limit)


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


def dumps_pieces(value: Any) -> Iterator[bytes]:
    """``dumps(value)`` in pieces: an object member, or an item of a list that is one, at
    a time. A document of megabytes (an expand handle's messages) is then compressed as
    it is written, and never held whole."""
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        yield dumps(value)
        return
    yield b"{"
    for n, (key, member) in enumerate(value.items()):
        yield (b"," if n else b"") + dumps(key) + b":"
        if isinstance(member, list):
            yield b"["
            for m, item in enumerate(member):
                yield (b"," if m else b"") + dumps(item)
            yield b"]"
        else:
            yield dumps(member)
    yield b"}"
