"""A large JSON body read a piece at a time, the event loop running between pieces.

orjson reads a 15 MB body in one call of 40 to 100 ms that holds the interpreter:
every other request on the worker, /healthz included, waits that long, and a thread
would not help (the call never lets the lock go). A request body is an object whose
bulk is in its top-level lists (``messages``, ``actions``, ``memories``,
``tool_calls``), so the object is cut at its members and those lists at their items,
each piece read by orjson on its own; a piece is at most one item, whose texts the
limits bound; the loop turns every 256 KB, and every 256 items of a list however
short. The cuts are found with a few regular expressions over the bytes (a string
is skipped whole, in C) and checked: between pieces only the JSON punctuation
and blanks are allowed, and each piece must read as JSON by itself. Anything else (a
body that is not an object, a stray byte, a piece orjson refuses) is read whole by
``loads_fast``, so what a body reads as, and which bodies are refused, is the same
either way; the tests hold the two equal.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Generator
from typing import Any

import orjson

from app.adapters.jsoncodec import UNREAD, Unread, loads_fast, orjson_changed
from app.engine.errors import NestedTooDeep
from app.engine.jsontext import deeper_than

# Bodies up to this size are read whole: a few milliseconds.
STEP_BYTES = 1 << 20
# Read between two turns of the event loop: a millisecond or two of orjson.
_TURN_BYTES = 256 << 10
# Or this many items of a list, whatever their bytes: each piece costs its cuts and
# checks in Python (about 20 us), and 256 KB of short items (100,000 actions of a line
# each) took 60 ms between two turns.
_TURN_ITEMS = 256

_BLANKS = re.compile(rb"[ \t\n\r]*")
# What ends a value or changes the nesting, outside strings.
_STRUCTURE = re.compile(rb'["\[\]{},]')
_OPEN = frozenset(b"[{")
_CLOSE = frozenset(b"]}")
_QUOTE = 34
_BACKSLASH = 92


async def loads_in_steps(body: bytes, max_depth: int | None = None, *,
                         whole_up_to: int = STEP_BYTES) -> Any:
    """``loads_fast(body, max_depth)``, reading a body past ``whole_up_to`` bytes a piece
    at a time and letting the event loop run between pieces. Each piece is checked as
    ``loads_fast`` checks a body (its depth, where it sits in the body, and whether
    orjson may have changed it): whole, the checks were another 20 to 60 ms of one call."""
    if len(body) <= whole_up_to:
        return loads_fast(body, max_depth)
    steps = _read(body, max_depth)
    try:
        while True:
            next(steps)
            await asyncio.sleep(0)
    except StopIteration as done:
        value = done.value
    return loads_fast(body, max_depth) if isinstance(value, Unread) else value


def _skip(body: bytes, at: int) -> int:
    found = _BLANKS.match(body, at)
    return found.end() if found is not None else at


def _next(body: bytes, at: int, close: bytes) -> int:
    """Past the blanks from ``at``: after a comma and the blanks that follow it, or after
    ``close``; -1 where neither is."""
    at = _skip(body, at)
    found = body[at : at + 1]
    if found == b",":
        return _skip(body, at + 1)
    return at + 1 if found == close else -1


def _string_end(body: bytes, at: int) -> int:
    """Where the string that opens at ``at`` ends (after its closing quote); -1 if it
    does not. A quote with an odd run of backslashes before it is escaped."""
    pos = at + 1
    while True:
        quote = body.find(b'"', pos)
        if quote < 0:
            return -1
        before = quote
        while body[before - 1] == _BACKSLASH:
            before -= 1
        if (quote - before) % 2 == 0:
            return quote + 1
        pos = quote + 1


def _value_end(body: bytes, at: int) -> int:
    """Where the value that starts at ``at`` ends (a scalar: before the comma or bracket
    that follows it); -1 where no value ends."""
    depth = 0
    pos = at
    while True:
        hit = _STRUCTURE.search(body, pos)
        if hit is None:
            return len(body) if depth == 0 else -1
        where = hit.start()
        byte = body[where]
        if byte == _QUOTE:
            pos = _string_end(body, where)
            if pos < 0:
                return -1
            if depth == 0:
                return pos
        elif byte in _OPEN:
            depth += 1
            pos = where + 1
        elif byte in _CLOSE:
            if depth == 0:
                return where
            depth -= 1
            pos = where + 1
            if depth == 0:
                return pos
        elif depth == 0:  # a comma after a scalar
            return where
        else:
            pos = where + 1


class _Pieces:
    """Reads the pieces of one body, each checked as ``loads_fast`` checks a body."""

    def __init__(self, body: bytes, max_depth: int | None) -> None:
        self.body = body
        self._view = memoryview(body)
        self._max_depth = max_depth

    def read(self, at: int, end: int, level: int) -> Any:
        """The value of ``body[at:end]``, ``level`` lists and objects deep in the body;
        UNREAD where orjson may have changed it. Raises NestedTooDeep, and orjson's
        error for what is no JSON."""
        value = orjson.loads(self._view[at:end])
        limit = self._max_depth
        if limit is not None:
            left = limit - level
            body = self.body
            if body.count(b"[", at, end) + body.count(b"{", at, end) > left and \
                    deeper_than(value, left):
                raise NestedTooDeep(limit)
        return UNREAD if orjson_changed(self.body, value, at, end) else value


def _read(body: bytes, max_depth: int | None) -> Generator[None, None, Any]:
    """The body's value, or UNREAD; yields between pieces."""
    pieces = _Pieces(body, max_depth)
    value: dict[str, Any] = {}
    at = _skip(body, 0)
    if body[at : at + 1] != b"{":
        return UNREAD
    at = _skip(body, at + 1)
    turned = 0
    try:
        if body[at : at + 1] == b"}":
            at += 1
        while at < len(body) and body[at - 1 : at] != b"}":
            if body[at : at + 1] != b'"':
                return UNREAD
            end = _string_end(body, at)
            if end < 0:
                return UNREAD
            name = orjson.loads(body[at:end])
            at = _skip(body, end)
            if body[at : at + 1] != b":":
                return UNREAD
            at = _skip(body, at + 1)
            if body[at : at + 1] == b"[":
                items: list[Any] = []
                at = _skip(body, at + 1)
                if body[at : at + 1] == b"]":
                    at += 1
                while body[at - 1 : at] != b"]":
                    end = _value_end(body, at)
                    if end < 0:
                        return UNREAD
                    item = pieces.read(at, end, 2)
                    if item is UNREAD:
                        return UNREAD
                    items.append(item)
                    at = _next(body, end, b"]")
                    if at < 0:
                        return UNREAD
                    if at - turned > _TURN_BYTES or len(items) % _TURN_ITEMS == 0:
                        turned = at
                        yield
                member: Any = items
            else:
                end = _value_end(body, at)
                if end < 0:
                    return UNREAD
                member = pieces.read(at, end, 1)
                if member is UNREAD:
                    return UNREAD
                at = end
            value[name] = member
            at = _next(body, at, b"}")
            if at < 0:
                return UNREAD
            if at - turned > _TURN_BYTES:
                turned = at
                yield
    except orjson.JSONDecodeError:
        return UNREAD
    if _skip(body, at) != len(body) or body[at - 1 : at] != b"}":
        return UNREAD
    return value
