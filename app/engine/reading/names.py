"""The names an agent works with: what its own messages and calls name most, lately.

Once a budget condenses a long stretch of turns into a digest, the files, functions,
modules and variables the agent was working with are gone with them, and it would have
to read the code again to write their names. The agent's own words and calls show which
names those are: what it wrote, ran and asked about. A name here is a word of
identifier shape (a path, a dotted name, snake_case, an inner capital, a letter beside
a digit: ``pydicom/dataelem.py``, ``_convert_value``, ``DataElement``, ``L031``), the
shapes ``reading.gist`` and the receipt's facts treat as specific; plain words and bare
numbers name nothing. The tool results' names come only after all of the agent's own,
in the room those leave: most of what a listing or a file shows is never used again
(counted over tune's long mini-swe-agent session at 8k, the agent's own names held more
than twice the needed facts, for their size, of names taken from the results too), but
a large budget has room past the agent's own names, and over a session of thousands of
messages the names an agent goes back to (a file it listed, a function it read) were
often last seen in a result.

Names are ranked by how often the agent used them (or the results showed them), each
use weighing half as much every ``HALF_LIFE`` of those messages back, so the newest work
leads and a name used all along stays.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from app.engine.memo import CacheUsage, Memo, combined
from app.engine.transcript.model import Message

# A word: an optional leading ./ ../ / or ~/ then letters, digits, _ . / and -. It never
# begins with a digit: bare numbers and line ranges (``120``, ``115p``) name nothing.
_WORD = re.compile(r"(?:\.{1,2}/|/|~/)?[A-Za-z_][A-Za-z0-9_./\-]*")
_INNER_DOT = re.compile(r"[A-Za-z0-9_]{2}\.[A-Za-z0-9_]{2}")  # config.py, os.path; not e.g
# Escapes inside a quoted argument (a script written with ``echo -e "...\nEOF"``, JSON
# strings): read as the blanks they stand for, so ``\nEOF`` is not the name ``nEOF``.
_ESCAPES = re.compile(r"\\[ntr]")
# A use weighs half as much every this many of the agent's messages back: about the
# stretch of work an agent spends on one part of a task. Counted offline over tune's
# long mini-swe-agent session at 8k, half-lives of 10, 20 and 100 held within a point
# of each other.
HALF_LIFE = 20
# The agent's messages read, newest first: past 16 half-lives a use weighs under a
# sixty-thousandth of a new one, and a long session's thousands of messages would
# otherwise be read on every call.
_READ = 16 * HALF_LIFE
# The tool results read, newest first: far fewer, since a result holds many times the
# names of an agent's message, and reading them made a cold budgeted call on OpenCode's
# long session at 128k 80% slower with 320. On tune's OpenCode session at 128k (eval
# --long), 80 kept 57.5% of the needed facts, 320 kept 59.4%, none 54.1%.
_SHOWN = 4 * HALF_LIFE
_SHORTEST = 3


def names_in(text: str) -> frozenset[str]:
    """The words of identifier shape in ``text``, trailing dots, dashes and slashes
    trimmed."""
    out = set()
    for word in _WORD.findall(_ESCAPES.sub(" ", text)):
        word = word.rstrip(".-/")
        if len(word) >= _SHORTEST and _named(word):
            out.add(word)
    return frozenset(out)


def _named(word: str) -> bool:
    if "_" in word or "/" in word or any(c.isdigit() for c in word):
        return True
    return _INNER_DOT.search(word) is not None or any(c.isupper() for c in word[1:])


class Names:
    """``names_in`` memoized by text, and each list made, by the messages it read: a
    digest is written again at each cut point a call tries, and the next call of the
    loop tries the same points again."""

    def __init__(self, *, cache_bytes: int = 6 << 20) -> None:
        # Half for the lists, each kept as the line it is: one string weighs a third to
        # a fifth of a tuple of its names (``footprint``), and a memo keeps no entry past
        # a thirty-second of its bytes (a list at 128k tokens is some 50,000 characters).
        # Past that (a budget of a million tokens), a list is made again from the
        # memoized texts.
        self._memo: Memo[str, frozenset[str]] = Memo(cache_bytes - cache_bytes // 2,
                                                     fingerprinted=True)
        self._lists: Memo[tuple[object, ...], str] = Memo(cache_bytes // 2,
                                                          fingerprinted=True)

    @property
    def usage(self) -> CacheUsage:
        return combined(self._memo.usage, self._lists.usage)

    def of(self, message: Message) -> set[str]:
        """The names in a message: its text and its calls' arguments."""
        out = set(self._memo.get(message.text, names_in)) if message.text else set()
        for call in message.tool_calls:
            out |= self._memo.get(call.arguments, names_in)
        return out

    def in_use(self, messages: Sequence[Message], chars: int) -> list[str]:
        """The names the agent's messages among ``messages`` use most, lately, then
        those their tool results show most, lately (see the module's docstring), as
        many as fit in ``chars`` joined by ", "; in each, the heavier first, and of two
        alike the one used last."""
        mine = [m for m in messages if m.role == "assistant"][-_READ:]
        shown = [m for m in messages if m.role == "tool"][-_SHOWN:]
        key = (chars, tuple((m.text, *(c.arguments for c in m.tool_calls)) for m in mine),
               tuple(m.text for m in shown))
        listed = self._lists.get(key, lambda _: ", ".join(self._listed(mine, shown, chars)))
        return listed.split(", ") if listed else []

    def _listed(self, mine: Sequence[Message], shown: Sequence[Message],
                chars: int) -> tuple[str, ...]:
        own, full = _fitting(self._ranked(mine), chars, frozenset())
        if full:  # the results are not read at all
            return tuple(own)
        room = chars - sum(len(name) + 2 for name in own)
        more, _ = _fitting(self._ranked(shown), room, frozenset(own))
        return (*own, *more)

    def _ranked(self, messages: Sequence[Message]) -> list[str]:
        weight: dict[str, float] = {}
        last: dict[str, int] = {}
        for age, message in enumerate(reversed(messages)):
            share = 0.5 ** (age / HALF_LIFE)
            for name in self.of(message):
                weight[name] = weight.get(name, 0.0) + share
                last.setdefault(name, age)
        return sorted(weight, key=lambda n: (-weight[n], last[n], n))


def _fitting(ranked: Sequence[str], chars: int,
             taken: frozenset[str]) -> tuple[list[str], bool]:
    """The names of ``ranked`` not ``taken``, in order, as many as fit in ``chars`` each
    with its separator, up to the first that does not; and whether one did not."""
    out: list[str] = []
    for name in ranked:
        if name in taken:
            continue
        if len(name) + 2 > chars:
            return out, True
        out.append(name)
        chars -= len(name) + 2
    return out, False
