"""What a model sees of an OpenAI message list, as text and as cl100k tokens.

Every compactor is scored with the same counter: each message becomes one text
(its role, its content, each tool call as ``name(arguments)``), encoded with
cl100k. A prompt is the messages' token lists in order, so two prompts share a
prefix exactly as long as their leading messages match, plus the common start
of the first message that differs, which is how provider prompt caches see it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from app.engine.transcript.tokens import Encoder

Wire = dict[str, Any]


def content_text(content: Any) -> str:
    """A message's content: a string, or the text of its parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def argument_strings(arguments: str) -> list[str]:
    """The string values of a call's JSON arguments (the text an agent wrote in them), or
    the raw text when it is not JSON."""
    try:
        value = json.loads(arguments) if arguments else {}
    except ValueError:
        return [arguments]
    out: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
        elif item is not None:
            out.append(json.dumps(item))
    return out


def message_text(message: Wire) -> str:
    """One message as the model reads it."""
    lines = [f"{message.get('role', '')}: {content_text(message.get('content'))}"]
    for call in message.get("tool_calls") or []:
        fn = call.get("function", {})
        lines.append(f"{fn.get('name', '')}({fn.get('arguments', '')})")
    return "\n".join(lines)


def readable_text(message: Wire) -> str:
    """The same, with call arguments as the strings in them (JSON escapes undone), for
    looking facts up."""
    parts = [content_text(message.get("content"))]
    for call in message.get("tool_calls") or []:
        fn = call.get("function", {})
        parts.append(str(fn.get("name", "")))
        parts.extend(argument_strings(str(fn.get("arguments", ""))))
    return "\n".join(parts)


class Seen:
    """Token lists per message text, memoized: a replay sends the same messages again
    at every step."""

    def __init__(self, encoder: Encoder) -> None:
        self._encoder = encoder
        self._tokens: dict[str, tuple[int, ...]] = {}

    def tokens(self, message: Wire) -> tuple[int, ...]:
        text = message_text(message)
        found = self._tokens.get(text)
        if found is None:
            found = tuple(self._encoder.encode_ordinary(text))
            self._tokens[text] = found
        return found

    def prompt(self, messages: Sequence[Wire]) -> list[tuple[int, ...]]:
        return [self.tokens(m) for m in messages]


def count(prompt: Sequence[tuple[int, ...]]) -> int:
    return sum(len(t) for t in prompt)


def shared_prefix(before: Sequence[tuple[int, ...]], after: Sequence[tuple[int, ...]]) -> int:
    """Tokens at the start of ``after`` that equal the start of ``before``."""
    shared = 0
    for old, new in zip(before, after, strict=False):
        if old == new:
            shared += len(new)
            continue
        for a, b in zip(old, new, strict=False):
            if a != b:
                break
            shared += 1
        break
    return shared
