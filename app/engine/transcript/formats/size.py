"""The characters of text in a message of any wire format, for the request limits.

This runs over every message of every request before anything else reads it, so it
is compiled with the engine (see setup.py).
"""

from __future__ import annotations

from typing import Any

# Where text sits in a message, content block, part or item, in any of the formats;
# the values of the last three are tool arguments or results with keys of their own.
_TEXT_KEYS = frozenset({"content", "text", "thinking", "parts", "output", "arguments",
                        "summary", "tool_calls", "function", "functionResponse",
                        "functionCall"})
_FREE_KEYS = frozenset({"input", "args", "response"})


def content_chars(value: Any, *, every_key: bool = False) -> int:
    """Characters of text in a message, whatever its format's shape.

    A dict's own items are walked once, rather than each known key looked up in it:
    this runs over every message of every request."""
    if isinstance(value, str):
        return len(value)
    total = 0
    if isinstance(value, list):
        for item in value:
            total += content_chars(item, every_key=every_key)
    elif isinstance(value, dict):
        for key, item in value.items():
            if every_key or key in _FREE_KEYS:
                total += content_chars(item, every_key=True)
            elif key in _TEXT_KEYS:
                total += content_chars(item)
    return total


def conversation_chars(messages: list[Any], most: int) -> tuple[int, int]:
    """The characters of text in all of ``messages``, and the index of the first one with
    more than ``most`` (-1: none). One compiled loop: the limits check every request."""
    total = 0
    for i, m in enumerate(messages):
        chars = content_chars(m)
        if chars > most:
            return total, i
        total += chars
    return total, -1
