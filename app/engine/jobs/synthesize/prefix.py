"""Where the part of a ``/synthesize`` answer that later calls send again ends, in the
wire format's own messages, and the cache breakpoints placed there on request."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from app.engine.errors import InvalidOption
from app.engine.jobs.synthesize.synthesizer import Synthesis
from app.engine.transcript.formats import WireFormat, conversation
from app.engine.transcript.formats.cache_control import Position, with_breakpoints
from app.engine.transcript.model import Message, Transcript

# The format that takes breakpoints; the others cache prefixes without marks.
BREAKPOINT_FORMAT = "anthropic"


@dataclass(frozen=True, slots=True)
class Prefix:
    stable_messages: int  # the same on every later call while the agent only appends
    stable_tokens: int
    steady_messages: int  # the same on later calls until the next block closes
    steady_tokens: int
    # Where each prefix ends in the wire (message, block); None: at no message's end.
    stable_end: Position | None = None
    steady_end: Position | None = None
    # Where the notes end: kept across a block closing unless a note ages, so a mark there
    # lets the next closing read the notes from the cache.
    noted_end: Position | None = None
    breakpoints: tuple[Position, ...] = ()  # the marks this service placed


def check_breakpoints(asked: bool, format_name: str) -> None:
    if asked and format_name != BREAKPOINT_FORMAT:
        raise InvalidOption(
            f"'cache_breakpoints' places Anthropic cache_control marks, and this request is "
            f"in the {format_name!r} format; OpenAI and Gemini cache repeated prefixes "
            "without marks, so leave it out (or false).", pointer="/cache_breakpoints")


def measure(wire: WireFormat, synthesis: Synthesis, body: dict[str, Any],
            tokens: Callable[[Sequence[Message]], int]) -> Prefix:
    """The stable and steady prefixes of ``body``, the answer's conversation."""
    messages = synthesis.transcript.messages
    sent = conversation(body, wire)
    stable, stable_end = _boundary(wire, synthesis.transcript, synthesis.stable, sent)
    steady, steady_end = _boundary(wire, synthesis.transcript, synthesis.steady, sent)
    _, noted_end = _boundary(wire, synthesis.transcript, synthesis.noted, sent)
    return Prefix(stable, tokens(messages[: synthesis.stable]), steady,
                  tokens(messages[: synthesis.steady]), stable_end, steady_end, noted_end)


def _boundary(wire: WireFormat, transcript: Transcript, n: int, sent: Sequence[Any],
              ) -> tuple[int, Position | None]:
    """How many leading wire messages the first ``n`` messages give that ``sent`` holds
    as they are, and where those ``n`` end in ``sent``: a format may merge the last of
    them with the messages after it (Anthropic joins neighbours of one role), and then
    they end inside that message, after its first blocks."""
    if n <= 0:
        return 0, None
    prefix = Transcript(transcript.messages[:n], transcript.format, transcript.envelope)
    rendered = conversation(wire.render(prefix), wire)
    if not rendered:  # a system prompt alone: the format keeps it apart from the list
        return 0, None
    same = 0
    for a, b in zip(rendered, sent, strict=False):
        if a != b:
            break
        same += 1
    if same == len(rendered):
        return same, (same - 1, None)
    if same == len(rendered) - 1 and same < len(sent):
        mine, theirs = _blocks(rendered[same]), _blocks(sent[same])
        if mine and theirs[: len(mine)] == mine:
            return same, (same, len(mine) - 1)
    return same, None


def _blocks(message: Any) -> list[Any]:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


def place_breakpoints(body: dict[str, Any], prefix: Prefix,
                      ) -> tuple[dict[str, Any], Prefix]:
    """``body`` with marks where the prefixes end (Anthropic), and where the notes end."""
    ends = [e for e in (prefix.steady_end, prefix.noted_end, prefix.stable_end)
            if e is not None]
    marked, placed = with_breakpoints(body, ends)
    return marked, replace(prefix, breakpoints=tuple(placed))
