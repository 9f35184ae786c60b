"""Rendering shared by formats whose text parts are ``{"type": "text", "text": ...}``."""

from __future__ import annotations

from typing import Any

from app.engine.transcript import Part


def render_text_part(part: Part) -> Any:
    """The caller's own part when unchanged; a copy with the new text when the engine cut it."""
    if part.raw is None:
        return {"type": "text", "text": part.text}
    if part.kind == "text" and part.raw.get("text") is not part.text:
        return {**part.raw, "text": part.text}
    return part.raw
