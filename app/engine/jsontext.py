"""JSON text in transcripts: written without ASCII escapes, as providers write tool
arguments, and read with a bound on nesting.

``json.dumps`` with options builds a new encoder on every call; one shared
encoder (it keeps nothing between calls) costs about a sixth of that, which
shows on paths that run once per tool call.
"""

from __future__ import annotations

import json
from typing import Any

_ENCODER = json.JSONEncoder(ensure_ascii=False)


def dumps(value: object) -> str:
    return _ENCODER.encode(value)


# Text inside a transcript (tool arguments, a JSON result) is read by walkers that
# recurse once per level: deeper than this it is read as plain text, never as JSON.
MAX_DEPTH = 64


def deeper_than(value: object, limit: int) -> bool:
    """Whether lists and objects nest more than ``limit`` levels in ``value``. A loop with
    its own stack, so a value nested thousands deep is measured without recursion."""
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item \
            if isinstance(item, list) else None
        if children is None:
            continue
        depth += 1
        if depth > limit:
            return True
        stack.extend((child, depth) for child in children
                     if isinstance(child, (dict, list)))
    return False


def loads(text: str) -> Any:
    """JSON text from a transcript, or ValueError: for a syntax error, and for nesting
    deeper than MAX_DEPTH (the parser's own RecursionError included)."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise ValueError("nested too deep") from None
    if text.count("[") + text.count("{") > MAX_DEPTH and deeper_than(value, MAX_DEPTH):
        raise ValueError("nested too deep")
    return value


_KINDS: tuple[tuple[type, str], ...] = (
    (bool, "a boolean"), (int, "a number"), (float, "a number"), (str, "a string"),
    (list, "an array"), (dict, "an object"))


def json_kind(value: object) -> str:
    """What a JSON value is, in words, for errors that say what was sent instead."""
    if value is None:
        return "null"
    # bool before int: True is an int to Python, a boolean to the caller.
    return next((name for kind, name in _KINDS if isinstance(value, kind)), "a value")


def shown_value(value: object) -> str:
    """A value as an error quotes it: as JSON, cut short (an error never echoes a whole
    object back), and said in words when it is not a string or a number."""
    text = dumps(value) if not isinstance(value, str) else repr(value)
    if len(text) > 40:
        text = text[:40] + "..."
    if value is None or isinstance(value, str | int | float):
        return text
    return f"{text} ({json_kind(value)})"
