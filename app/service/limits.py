"""Request limits that apply to every job, and finding the conversation in a payload."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.engine.errors import LimitExceeded
from app.engine.transcript.formats import Payload, WireFormat
from app.engine.transcript.formats import conversation as format_conversation
from app.engine.transcript.formats.size import content_chars, conversation_chars
from app.settings import Settings

# Where a request carries its conversation, in any wire format: measured per message.
CONVERSATION_KEYS = frozenset({"messages", "contents", "input"})


def check_limits(payload: Payload, formats: Mapping[str, WireFormat], settings: Settings,
                 ) -> int:
    """Raise on a limit; return the characters of content, to size the work. Limits come
    before the format is resolved: an oversized payload is not read for its shapes."""
    key, messages = _conversation(payload, formats)
    limit = settings.max_messages
    if len(messages) > limit:
        raise LimitExceeded(
            f"the request has {len(messages)} messages; this service accepts at most "
            f"{limit}. Send the most recent {limit}, or compress in parts.",
            pointer=f"/{key}")
    most = settings.max_message_chars
    total, over = conversation_chars(messages, most)
    if over >= 0:
        raise LimitExceeded(
            f"{key}[{over}] has {content_chars(messages[over])} characters of content; the "
            f"limit is {most}. Cut the message (for example a huge tool output) before "
            "sending.", pointer=f"/{key}/{over}")
    return total


def check_texts(body: Any, limit: int, skip: frozenset[str]) -> None:
    """Raise on the first string in ``body`` longer than ``limit`` characters (memories,
    tool outputs, observations, scratchpads, questions...). Every step of a job reads a
    text whole, holding the interpreter while it does: the limit bounds how long any
    one step can keep other requests, /healthz included, waiting. Top-level keys in
    ``skip`` (the conversation) are measured per message by ``check_limits``."""
    stack: list[tuple[Any, str]] = [(v, f"/{k}") for k, v in body.items() if k not in skip] \
        if isinstance(body, dict) else [(body, "")]
    while stack:
        value, pointer = stack.pop()
        if isinstance(value, str):
            if len(value) > limit:
                raise LimitExceeded(
                    f"{pointer or '/'} has {len(value)} characters; the limit for one text "
                    f"is {limit} (CONTEXTSYNTH_MAX_MESSAGE_CHARS). Cut it (for example a "
                    "huge tool output or memory) before sending.", pointer=pointer or "/")
        elif isinstance(value, dict):
            stack.extend((v, f"{pointer}/{_escaped(str(k))}") for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, f"{pointer}/{i}") for i, v in enumerate(value))


def _escaped(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _conversation(payload: Payload, formats: Mapping[str, WireFormat]) -> tuple[str, list[Any]]:
    """The key and the list of messages, contents or input items, under the first key of
    a format that the payload carries."""
    for wire in formats.values():
        found = format_conversation(payload, wire)
        if found:
            return wire.keys[0], found
    return "messages", []
