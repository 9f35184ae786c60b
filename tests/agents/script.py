"""The scripted model's words, the same for every provider API.

A wire adapter (``tests.agents.wire``) reads a request body into a ``Seen``: what a
model would look at to choose its next move (the tools it is offered, the results of
its last calls, whether it must stream). A ``Player`` answers it with a ``Turn``: text,
tool calls, or both (and a thought, for the APIs that carry one). The adapter turns the
``Turn`` into the provider's answer.

Players must not count the history to know where they are: the proxy compacts it, so
an old call may be gone. They keep their own place and advance when a request carries
the result of the call they made last.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

EXPAND_TOOL = "contextsynth_expand"
HANDLE = re.compile(r"cs_\d{20}")

_ids = itertools.count(1)


def new_id(prefix: str) -> str:
    """A call id no other call of the run has (the wires' formats: toolu_, call_...)."""
    return f"{prefix}{next(_ids):06d}"


@dataclass(frozen=True)
class Call:
    """A tool call the model makes. ``id`` is filled by the wire when left empty."""

    name: str
    arguments: dict[str, Any]
    id: str = ""


@dataclass(frozen=True)
class Turn:
    """One answer of the model: ``thinking`` first (where the API has it), then ``text``,
    then ``calls``. No calls: the turn ends the model's work."""

    text: str = ""
    calls: tuple[Call, ...] = ()
    thinking: str = ""


@dataclass(frozen=True)
class Result:
    """The result of a call, as the client sent it back."""

    call_id: str
    text: str
    error: bool = False


@dataclass(frozen=True)
class Seen:
    """What one request shows the model."""

    route: str  # the path it came on
    model: str
    stream: bool
    tools: tuple[str, ...]  # the names of the tools offered, in order
    system: str  # the system prompt (or instructions), flattened to text
    results: tuple[Result, ...]  # results after the model's last turn (none: a new ask)
    last_user: str  # the text of the last user message (the ask, or what came with results)
    text: str  # everything the request holds as text, for handles and checks
    body: dict[str, Any] = field(repr=False)

    def handles(self) -> list[str]:
        """The expand handles the proxy's notes name in this request, first seen first."""
        return list(dict.fromkeys(HANDLE.findall(self.text)))


class Player(Protocol):
    """Plays the model for one program: picks the next turn from what it was sent."""

    def play(self, seen: Seen) -> Turn: ...


def flatten(value: Any) -> str:
    """Every string in a JSON value, one a line (what a request holds as text)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return "\n".join(flatten(v) for v in value.values())
    if isinstance(value, list):
        return "\n".join(flatten(v) for v in value)
    return "" if value is None else json.dumps(value)
