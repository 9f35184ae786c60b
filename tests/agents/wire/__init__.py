"""One adapter per provider API, for the scripted upstream (``tests.agents.upstream``).

The interface every adapter keeps (``Wire``):

- ``name``: the API's name (``anthropic``, ``responses``, ``chat``, ``gemini``);
- ``paths``: the Starlette path patterns it answers with a model's turn (``POST``),
  e.g. ``("/v1/messages",)``, ``("/v1beta/models/{model}:generateContent", ...)``;
- ``read(path, body, query) -> Seen``: what the request shows the model (see
  ``tests.agents.script.Seen``); ``Seen.stream`` says whether to answer as a stream
  (a body's ``stream: true``, or a Gemini ``:streamGenerateContent`` path);
- ``reply(seen, turn) -> Reply``: the provider's answer to it, whole (``Reply.body``)
  or as server-sent events (``Reply.events``: (event name or None, data) pairs; data a
  JSON value or a literal such as ``[DONE]``), each call given an id when it has none;
- ``other(path, body) -> Reply | None``: any other ``POST`` under its prefix that is
  not a model call (Anthropic's ``count_tokens``...), or None for a 404.

Call ids: the player names each call's id (``Call.id``) and moves on when a result
with that id comes back (``Result.call_id``). An API whose calls may carry no id
(Gemini's ``functionCall``) should send the player's id where the API has a field for
it, and read a result without one as answering the call of the same name.

Adapters are stateless except for what the API makes the server remember (a thinking
block's signature, which the next request must send back unchanged: see
``signatures``), and are shared by every program's test of that API.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from tests.agents.script import Seen, Turn

Event = tuple[str | None, Any]


@dataclass
class Reply:
    body: Any = None
    events: list[Event] | None = None
    status: int = 200


class Wire(Protocol):
    name: str
    paths: tuple[str, ...]

    def read(self, path: str, body: dict[str, Any], query: dict[str, str]) -> Seen: ...

    def reply(self, seen: Seen, turn: Turn) -> Reply: ...

    def other(self, path: str, body: dict[str, Any]) -> Reply | None: ...


def approx_tokens(text: str) -> int:
    """A usage figure for answers: about four characters a token, as providers report."""
    return max(1, len(text) // 4)


def halves(text: str) -> list[str]:
    """A text in two deltas, as a model streams it (a client must join them)."""
    middle = len(text) // 2
    return [part for part in (text[:middle], text[middle:]) if part]
