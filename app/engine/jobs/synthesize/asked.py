"""The records the newest request names, said just before it (see ``records``).

What closed blocks' notes say stays the same bytes on every call, so the rows a user's
newest message names cannot be chosen there; they are said in a message of their own
just before that message. It is read from the request and what came before it only, so
it stays the same bytes on every call until the user speaks again: a provider's cache
holds it from the second call on, where after the newest turn it would be paid in full
on every call (on the tune split that cost the support agents' family 3 points of its
cost for 0.7 of recall).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from app.engine.prompts import MARKER
from app.engine.reading.records import Records, named, tokens, unshown, words
from app.engine.transcript.model import Message, text_message

# The answers looked in, newest last: a conversation's records are read near where the
# user asks for them, and a scan of every result of a long run costs on every call.
_ANSWERS: Final = 48
HEADER = (MARKER + " Records your next message names, from earlier results (the notes "
          "above show them in part):")


class Asked:
    """The reminder and where it goes: before ``out[at]``, the request."""

    __slots__ = ("at", "message")

    def __init__(self, at: int, message: Message) -> None:
        self.at = at
        self.message = message


def asked_records(messages: Sequence[Message], out: Sequence[Message], records: Records,
                  start: int) -> list[Asked]:
    """For each user message of ``out`` from ``start`` on, the rows of the results before
    it (in ``messages``, as the strategies see them: observations are results) that its
    words name and ``out`` does not show before it, in order. Each stays the same bytes
    on every later call, so a request's reminder stays once the user has spoken again:
    taking it out would change every turn after it, each a cache read until then."""
    wires = {m.index: i for i, m in enumerate(messages) if m.role == "user"}
    out_found: list[Asked] = []
    said: list[str] = []
    for place in range(start, len(out)):
        m = out[place]
        at = wires.get(m.index) if m.role == "user" else None
        if at is None:
            continue
        wanted = words(messages[at].text)
        if not wanted:
            continue
        answers = [r for r in messages[:at] if r.role == "tool"][-_ANSWERS:]
        found = [records.of(r.text) for r in answers]
        if not any(found):
            continue
        candidates = named(wanted, found)
        if not candidates:
            continue
        # What an earlier reminder said counts as shown: each says only what is new.
        # Read only for a row with values to look for: it is the whole output so far.
        shown = tokens("\n".join([*(o.text for o in out[:place]), *said])) \
            if any(row.ids for _, _, row in candidates) else frozenset()
        rows = unshown(candidates, shown)
        if rows:
            said.extend(rows)
            out_found.append(Asked(place, text_message("user", "\n".join([HEADER, *rows]))))
    return out_found
