"""Canonical transcript: the one shape every wire format parses into.

``raw`` fields hold the wire object a message or part came from. The engine
never looks inside them; each format uses them to render kept messages back
with every field the caller sent, including ones this service does not know.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from app.engine.errors import InvalidTranscript

Role = Literal["system", "user", "assistant", "tool"]
# Index of a system prompt that sits outside the message list (Anthropic ``system``,
# Gemini ``systemInstruction``, Responses ``instructions``): authored, but no position.
SYSTEM_INDEX = 1_000_000_000
Raw = Mapping[str, Any]


# Part, ToolCall and Message are built for every message of every request. Their
# __init__ is written out (init=False) so that mypyc compiles it: a generated one runs
# interpreted, about five times the cost. They are values all the same: nothing
# mutates them, changes go through dataclasses.replace.
@dataclass(init=False)
class Part:
    """One piece of content. ``kind`` is ``text``, ``thinking`` or an opaque block type."""

    kind: str
    text: str
    raw: Any

    def __init__(self, kind: str, text: str = "", raw: Any = None) -> None:
        self.kind = kind
        self.text = text
        self.raw = raw


@dataclass(init=False)
class ToolCall:
    id: str
    name: str
    arguments: str
    raw: Any

    def __init__(self, id: str, name: str, arguments: str, raw: Any = None) -> None:
        self.id = id
        self.name = name
        self.arguments = arguments
        self.raw = raw


@dataclass(init=False)
class Message:
    role: Role
    parts: tuple[Part, ...]
    tool_calls: tuple[ToolCall, ...]
    tool_call_id: str | None
    name: str | None
    is_error: bool
    raw: Any
    # Position of the wire message this came from (-1: written by the engine).
    index: int

    def __init__(self, role: Role, parts: tuple[Part, ...] = (),
                 tool_calls: tuple[ToolCall, ...] = (), tool_call_id: str | None = None,
                 name: str | None = None, is_error: bool = False, raw: Any = None,
                 index: int = -1) -> None:
        self.role = role
        self.parts = parts
        self.tool_calls = tool_calls
        self.tool_call_id = tool_call_id
        self.name = name
        self.is_error = is_error
        self.raw = raw
        self.index = index

    @property
    def text(self) -> str:
        parts = self.parts
        if len(parts) == 1:
            return parts[0].text
        return "\n".join(p.text for p in parts if p.text)

    @property
    def authored(self) -> bool:
        """True for messages the caller sent, False for ones the engine wrote."""
        return self.index >= 0


def text_message(role: Role, text: str) -> Message:
    return Message(role=role, parts=(Part("text", text),))


# The values made once per call stay frozen, with __init__ written out all the same: a
# generated frozen one runs interpreted and sets each field through object.__setattr__,
# which mypyc compiles to a direct store (about 15 times faster, measured). Several of
# them per call were 7% of a warm call.
@dataclass(frozen=True, init=False)
class Transcript:
    """Messages plus format-level data (for example Anthropic's top-level fields)."""

    messages: tuple[Message, ...]
    format: str
    envelope: Mapping[str, Any]

    def __init__(self, messages: tuple[Message, ...], format: str,
                 envelope: Mapping[str, Any] | None = None) -> None:
        object.__setattr__(self, "messages", messages)
        object.__setattr__(self, "format", format)
        object.__setattr__(self, "envelope", {} if envelope is None else envelope)


@dataclass(init=False)  # written out for the same reason as Message's
class Turn:
    """Messages ``[start, stop)`` of a transcript: one assistant message and what answers it."""

    start: int
    stop: int

    def __init__(self, start: int, stop: int) -> None:
        self.start = start
        self.stop = stop


@dataclass(frozen=True, init=False)  # written out: see Transcript
class Segments:
    """The head (system messages and the task) and the turns after it."""

    head_stop: int
    turns: tuple[Turn, ...]
    task_index: int | None

    def __init__(self, head_stop: int, turns: tuple[Turn, ...], task_index: int | None,
                 ) -> None:
        object.__setattr__(self, "head_stop", head_stop)
        object.__setattr__(self, "turns", turns)
        object.__setattr__(self, "task_index", task_index)


def segment(messages: Sequence[Message]) -> Segments:
    """Split messages into the head and turns.

    The head runs up to the first assistant message, so it holds the system
    prompt, the task (first user message) and anything the user added before
    the agent first spoke. Each turn starts at an assistant message.
    """
    task_index = None
    starts = []
    for i, m in enumerate(messages):
        role = m.role
        if role == "assistant":
            starts.append(i)
        elif role == "user" and task_index is None:
            task_index = i
    if not starts:
        return Segments(len(messages), (), task_index)
    starts.append(len(messages))
    turns = tuple(Turn(a, b) for a, b in itertools.pairwise(starts))
    return Segments(starts[0], turns, task_index)


def _link(messages: Sequence[Message]) -> tuple[list[ToolCall], list[Message | None]]:
    """Every tool call in order, and beside it the result that answers it (or None).

    Providers reuse call ids (tau-bench's runs answer 27 calls with 22 ids), so an
    id alone does not name a call. The rule, for every format and job: a result
    answers the nearest earlier call with its id that has no result yet; calls of
    one message with the same id are answered in their order.
    """
    calls: list[ToolCall] = []
    results: list[Message | None] = []
    # Per id, the calls still waiting for a result, each with its message's position.
    waiting: dict[str, list[tuple[int, int]]] = {}
    for position, m in enumerate(messages):
        for call in m.tool_calls:
            # Not setdefault: it would build an empty list for every call.
            queue = waiting.get(call.id)
            if queue is None:
                waiting[call.id] = [(position, len(calls))]
            else:
                queue.append((position, len(calls)))
            calls.append(call)
            results.append(None)
        if m.role == "tool" and m.tool_call_id is not None:
            queue = waiting.get(m.tool_call_id)
            if queue:
                newest = queue[-1][0]
                at = len(queue) - 1
                while at > 0 and queue[at - 1][0] == newest:
                    at -= 1
                results[queue.pop(at)[1]] = m
    return calls, results


def call_results(messages: Sequence[Message]) -> list[tuple[ToolCall, Message | None]]:
    """Each tool call, in order, with the result that answers it (see :func:`_link`)."""
    calls, results = _link(messages)
    return list(zip(calls, results, strict=True))


def calls_by_result(messages: Sequence[Message]) -> dict[int, ToolCall]:
    """The call each tool result answers, keyed by the result's ``id()``."""
    calls, results = _link(messages)
    return {id(r): c for c, r in zip(calls, results, strict=True) if r is not None}


def _describe(message: Message, position: int) -> str:
    where = message.index if message.index >= 0 else position
    return f"messages[{where}] (role {message.role})"


def validate_pairs(messages: Sequence[Message]) -> None:
    """Raise :class:`InvalidTranscript` on a tool result or call without its partner.

    A tool result must answer a call of the closest assistant message before
    it, once; every call must be answered before the next assistant message.
    """
    open_calls: dict[str, tuple[int, Message, str]] = {}
    answered: set[str] = set()
    for position, message in enumerate(messages):
        if message.role == "assistant":
            _raise_unanswered(open_calls)
            answered.clear()
            for call in message.tool_calls:
                open_calls[call.id] = (position, message, call.name)
        elif message.role == "tool":
            call_id = message.tool_call_id or ""
            if call_id in open_calls:
                del open_calls[call_id]
                answered.add(call_id)
                continue
            if call_id in answered:
                problem = "answers it a second time"
            else:
                problem = "was not issued by the assistant message before it"
            raise InvalidTranscript(
                f"{_describe(message, position)} is a tool result for call id {call_id!r}, "
                f"which {problem}. Put each tool result right after the assistant message "
                "whose tool call it answers, or drop the orphaned result.",
                pointer=f"/messages/{message.index if message.index >= 0 else position}",
            )
    _raise_unanswered(open_calls)


def _raise_unanswered(open_calls: dict[str, tuple[int, Message, str]]) -> None:
    if not open_calls:
        return
    call_id, (position, message, name) = next(iter(open_calls.items()))
    raise InvalidTranscript(
        f"{_describe(message, position)} calls tool {name!r} with id {call_id!r}, but no "
        "tool result answers it before the next assistant message or the end. Send the "
        "tool's result after the call (an error result is fine), or drop the call.",
        pointer=f"/messages/{message.index if message.index >= 0 else position}",
    )
