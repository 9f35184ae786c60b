"""The bytes a transcript's messages hold (see ``footprint``), read field by field.

Caches of recent turns and notes hold messages more than anything else; a compiled
read of each field costs a fraction of looking the fields up by name, which is what
``footprint`` does for a class it does not know (it sits below the transcript and knows
none)."""

from __future__ import annotations

import sys
from typing import Final

from app.engine.footprint import POINTER, TUPLE_HEADER, footprint
from app.engine.transcript.model import Message, Part, ToolCall

# Each class's own size, compiled or not (its fields follow).
_MESSAGE: Final[int] = sys.getsizeof(Message("user"))
_PART: Final[int] = sys.getsizeof(Part("text"))
_CALL: Final[int] = sys.getsizeof(ToolCall("", "", ""))


def size_of(obj: object) -> int:
    """``footprint(obj)``, with messages, parts and calls (in tuples too) read directly."""
    if isinstance(obj, Part):
        return _PART + footprint(obj.kind) + footprint(obj.text) + footprint(obj.raw)
    if isinstance(obj, Message):
        size = _MESSAGE + size_of(obj.parts) + size_of(obj.tool_calls) + footprint(obj.raw)
        if obj.tool_call_id is not None:
            size += footprint(obj.tool_call_id)
        if obj.name is not None:
            size += footprint(obj.name)
        return size + footprint(obj.role) + footprint(obj.index)
    if isinstance(obj, ToolCall):
        return _CALL + footprint(obj.id) + footprint(obj.name) + footprint(obj.arguments) + \
            footprint(obj.raw)
    if isinstance(obj, tuple):
        size = TUPLE_HEADER + POINTER * len(obj)
        for item in obj:
            size += size_of(item)
        return size
    return footprint(obj)
