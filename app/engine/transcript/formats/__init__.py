"""Wire formats: each parses a request payload to a canonical transcript and renders it back.

A payload is the part of a request body that carries the conversation
(``messages`` plus, for Anthropic, the top-level ``system``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from app.engine.errors import AmbiguousFormat, UnknownFormat
from app.engine.transcript.model import Transcript

Payload = Mapping[str, Any]

# Evidence a format gives at most: two places name a format well enough in an error,
# and stopping there spares a long transcript a description of each of its messages.
EVIDENCE_SHOWN = 2


class WireFormat(Protocol):
    name: str
    # The top-level request keys that carry this format's conversation.
    keys: tuple[str, ...]

    def evidence(self, payload: Payload) -> list[str]:
        """Where the payload shows shapes only this format has (empty: none), the first
        ``EVIDENCE_SHOWN`` of them."""
        ...

    def parse(self, payload: Payload) -> Transcript: ...

    def render(self, transcript: Transcript) -> dict[str, Any]: ...


def conversation(payload: Payload, wire: WireFormat) -> list[Any]:
    """The messages, contents or input items of ``payload``, under the format's first key
    (Responses accepts a bare string as its input)."""
    value = payload.get(wire.keys[0])
    if isinstance(value, list):
        return value
    return [value] if isinstance(value, str) else []


def build_formats() -> dict[str, WireFormat]:
    # Imported here so the registry is built on demand, never at import time.
    from app.engine.transcript.formats.anthropic import AnthropicFormat
    from app.engine.transcript.formats.gemini import GeminiFormat
    from app.engine.transcript.formats.openai import OpenAIFormat
    from app.engine.transcript.formats.responses import ResponsesFormat

    formats: list[WireFormat] = [OpenAIFormat(), AnthropicFormat(), GeminiFormat(),
                                 ResponsesFormat()]
    return {f.name: f for f in formats}


# Plain role/content messages are valid in every format; OpenAI's shape is
# what most agents speak, so an undecided payload is read as OpenAI.
DEFAULT_FORMAT = "openai"


def resolve_format(formats: Mapping[str, WireFormat], name: str, payload: Payload) -> WireFormat:
    if name != "auto":
        chosen = formats.get(name)
        if chosen is None:
            known = ", ".join(["auto", *formats])
            raise UnknownFormat(
                f"format {name!r} is not one this service speaks; use one of: {known}.",
                pointer="/format",
            )
        return chosen
    # Each format's first key holds its conversation; two of them is two conversations.
    carriers = sorted({f.keys[0] for f in formats.values() if f.keys[0] in payload})
    if len(carriers) > 1:
        owners = ", ".join(f"'{k}' ({', '.join(n for n, f in formats.items() if f.keys[0] == k)})"
                           for k in carriers)
        raise AmbiguousFormat(
            f"the payload carries more than one conversation: {owners}. Send exactly one of "
            "them.", pointer="/")
    found = {n: ev for n, f in formats.items() if (ev := f.evidence(payload))}
    if len(found) > 1:
        shown = "; ".join(f"{n}: {', '.join(ev[:2])}" for n, ev in found.items())
        raise AmbiguousFormat(
            f"the payload has shapes of more than one wire format ({shown}). Send every "
            "message in one format, or name it with the 'format' field.",
            pointer="/messages",
        )
    if found:
        return formats[next(iter(found))]
    return formats[DEFAULT_FORMAT]
