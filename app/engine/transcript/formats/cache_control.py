"""Anthropic prompt-cache breakpoints: ``cache_control`` marks on content blocks.

Anthropic caches a prompt's prefix up to a block marked ``cache_control`` and
reads it back when a later request repeats that prefix (looking back up to 20
blocks from each mark). A request may carry at most 4 marks, counting those on
tools, the system prompt and messages. Marks on the end of the part of our
output that later calls send again give the agent cache hits with no code of
its own; the caller's own marks are kept and count against the limit.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

MAX_BREAKPOINTS = 4
_LAST = 1 << 30
_UNMARKABLE = ("thinking", "redacted_thinking")  # Anthropic refuses marks on these


def count_breakpoints(body: dict[str, Any]) -> int:
    """The marks a request body already carries."""
    blocks: list[Any] = []
    for key in ("tools", "system"):
        value = body.get(key)
        if isinstance(value, list):
            blocks.extend(value)
    for m in body.get("messages") or []:
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, list):
            blocks.extend(content)
    return sum(1 for b in blocks if isinstance(b, dict) and "cache_control" in b)


# Where a mark goes: a message's index, and the index of the block in it (None: its
# last block that can take one).
Position = tuple[int, int | None]


def with_breakpoints(body: dict[str, Any], ends: Iterable[Position],
                     ) -> tuple[dict[str, Any], list[Position]]:
    """``body`` with a mark at each of ``ends``, the latest first while the limit
    allows; and the positions marked, as (message, block)."""
    messages: list[Any] = list(body.get("messages") or [])
    room = MAX_BREAKPOINTS - count_breakpoints(body)
    placed: list[Position] = []
    # The latest end covers the longest prefix, so it saves the most when room is short.
    # None stands for a message's last block: later than any block named by index.
    for i, block in sorted(set(ends), key=lambda e: (e[0], _LAST if e[1] is None else e[1]),
                           reverse=True):
        if room <= 0:
            break
        if not 0 <= i < len(messages):
            continue
        marked = _marked(messages[i], block)
        if marked is None:
            continue
        messages[i], at = marked
        placed.append((i, at))
        room -= 1
    if not placed:
        return body, []
    return {**body, "messages": messages}, sorted(placed)


def _marked(message: Any, block: int | None) -> tuple[dict[str, Any], int] | None:
    """The message with a mark on block ``block`` (None: its last block that can take
    one), and the block's index; None when there is no such block or it is marked."""
    if not isinstance(message, dict):
        return None
    content = message.get("content")
    if isinstance(content, str):
        content = [{"type": "text", "text": content}] if content else []
    if not isinstance(content, list):
        return None
    candidates = range(len(content) - 1, -1, -1) if block is None else [block]
    for j in candidates:
        if not 0 <= j < len(content):
            return None
        b = content[j]
        if not isinstance(b, dict) or b.get("type") in _UNMARKABLE \
                or (b.get("type") == "text" and not b.get("text")):
            continue  # Anthropic takes no mark there (an empty text block is not cached)
        if "cache_control" in b:
            return None
        blocks: Sequence[Any] = [*content[:j], _mark(b), *content[j + 1:]]
        return {**message, "content": list(blocks)}, j
    return None


def _mark(block: dict[str, Any]) -> dict[str, Any]:
    return {**block, "cache_control": {"type": "ephemeral"}}
