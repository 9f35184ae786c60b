"""Request limits that apply to every job, and finding the conversation in a payload."""

from __future__ import annotations

from typing import Any

from app.engine.errors import LimitExceeded
from app.engine.formats import Payload
from app.settings import Settings


def check_limits(payload: Payload, settings: Settings) -> int:
    """Raise on a limit; return the characters of content, to size the work."""
    key, messages = conversation(payload)
    limit = settings.max_messages
    if len(messages) > limit:
        raise LimitExceeded(
            f"the request has {len(messages)} messages; this service accepts at most "
            f"{limit}. Send the most recent {limit}, or compress in parts.",
            pointer=f"/{key}")
    most = settings.max_message_chars
    total = 0
    for i, m in enumerate(messages):
        chars = content_chars(m)
        if chars > most:
            raise LimitExceeded(
                f"{key}[{i}] has {chars} characters of content; the limit is {most}. "
                "Cut the message (for example a huge tool output) before sending.",
                pointer=f"/{key}/{i}")
        total += chars
    return total


def conversation(payload: Payload) -> tuple[str, list[Any]]:
    """The key and the list of messages, contents or input items."""
    for key in ("messages", "contents", "input"):
        value = payload.get(key)
        if isinstance(value, list):
            return key, value
        if isinstance(value, str):
            return key, [value]
    return "messages", []


# Where text sits in a message, content block, part or item, in any of the formats;
# the values of the last three are tool arguments or results with keys of their own.
_TEXT_KEYS = ("content", "text", "thinking", "parts", "output", "arguments", "summary",
              "tool_calls", "function", "functionResponse", "functionCall")
_FREE_KEYS = ("input", "args", "response")


def content_chars(value: Any, *, every_key: bool = False) -> int:
    """Characters of text in a message, whatever its format's shape."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return sum(content_chars(v, every_key=every_key) for v in value)
    if not isinstance(value, dict):
        return 0
    if every_key:
        return sum(content_chars(v, every_key=True) for v in value.values())
    return (sum(content_chars(value.get(k)) for k in _TEXT_KEYS)
            + sum(content_chars(value.get(k), every_key=True) for k in _FREE_KEYS))
