"""Rendering shared by formats whose text parts are ``{"type": "text", "text": ...}``."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from app.engine.transcript.model import Message, Part, Role


def render_text_part(part: Part) -> Any:
    """The caller's own part when unchanged; a copy with the new text when the engine cut it."""
    if part.raw is None:
        return {"type": "text", "text": part.text}
    if part.kind == "text" and part.raw.get("text") is not part.text:
        return {**part.raw, "text": part.text}
    return part.raw


def group_by_role(messages: Sequence[Message],
                  wire_role: Mapping[Role, str]) -> Iterator[list[Message]]:
    """Runs of messages that share a wire role, for formats that want them merged."""
    group: list[Message] = []
    for m in messages:
        if group and wire_role[group[-1].role] != wire_role[m.role]:
            yield group
            group = []
        group.append(m)
    if group:
        yield group
