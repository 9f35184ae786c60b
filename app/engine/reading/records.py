"""Records the conversation asks about: rows of earlier answers the newest request names.

A support agent reads a customer's profile early (payment methods, orders, a product's
variants) and acts on one row of it much later, when the customer names it: "the gift
card with the smallest balance", "the same watch with a black dial and the leather
strap". By then the profile is a note, or a recent turn cut to its first lines, and the
row the request names is behind a handle. The rows whose values carry the request's
words (``source=gift_card``, ``dial color=black``, ``strap material=leather``) are
found again here, so they can be shown after the newest turn, where a provider's cache
never held anything: the notes above stay the same bytes on every call.

A word names rows when it is rare among them: "card" among six payment methods of which
two are gift cards does; "order" among a list of orders does not.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Final

from app.engine.memo import CacheUsage, Memo
from app.engine.reading.answers import json_value, record_rows

_LETTERS = re.compile(r"[a-z]{3,}")
_VALUE_SPLIT = re.compile(r"[\s|,=:()\[\]]+")
# Words a request says whatever it asks for; none of them names a kind of record.
_COMMON: Final = frozenset("""
the and for you your yes not but can could would should will with this that these
those what which who how why when where there here them they their then than from into
onto about also just like want need please thank thanks sure okay fine all any some
each one two have has had was were are been being did does done get got make made use
used let know think sorry well now more much very really only still again even back
too our out off over under its it's his her him she hello tell give take see look find
same other another new old first last next ever never always may might must shall able
sir madam dear hey ok yeah nope actually maybe right left
""".split())  # noqa: SIM905 (170 quoted words read worse)
# A word on more than this share of the rows read names no kind of them.
_RARE = 0.5
# Rows shown at most, and characters over all of them: the reminder is paid in full on
# the call after the request, and read from a provider's cache on the calls after it.
_MAX_ROWS: Final = 8
ROWS_CHARS: Final = 640


def words(text: str) -> frozenset[str]:
    """A text's words as a request names things: lower case, split at underscores and
    digits (``gift_card_7252880`` is "gift" and "card"), a plural's ``s`` dropped."""
    out: set[str] = set()
    for word in _LETTERS.findall(text.lower()):
        if word in _COMMON:
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        out.add(word)
    return frozenset(out)


class Record:
    """One row an answer held: its line, its table's header (may be empty), the words
    of both, and the identifiers that say whether a text shows it already."""

    __slots__ = ("header", "ids", "line", "names")

    def __init__(self, header: str, line: str) -> None:
        self.header = header
        self.line = line
        self.names = words(line) | words(header)
        # Its values (ids, amounts): the row is shown already where all of them are.
        self.ids = frozenset(t for t in _VALUE_SPLIT.split(line)
                             if len(t) >= 2 and any(c.isdigit() for c in t))


class Records:
    """``record_rows`` of each answer's text, memoized: the same results come back on
    every call of a conversation."""

    def __init__(self, *, cache_bytes: int = 8 << 20) -> None:
        self._memo: Memo[str, tuple[Record, ...]] = Memo(cache_bytes, fingerprinted=True)

    @property
    def usage(self) -> CacheUsage:
        return self._memo.usage

    def of(self, text: str) -> tuple[Record, ...]:
        if not text.lstrip().startswith(("{", "[")):
            return ()  # most results are no JSON: no memo entry for them
        return self._memo.get(text, _records)


def _records(text: str) -> tuple[Record, ...]:
    value = json_value(text)
    if value is None:
        return ()
    return tuple(Record(header, line) for header, line in record_rows(value))


def tokens(text: str) -> frozenset[str]:
    """A text's values as ``Record.ids`` splits them, to tell the rows it shows."""
    return frozenset(_VALUE_SPLIT.split(text))


def asked(request: frozenset[str], answers: Iterable[Sequence[Record]],
          shown: frozenset[str]) -> list[str]:
    """The rows of ``answers`` (oldest first) that the ``request``'s words name and
    ``shown`` (the text the agent will read) does not show already, as lines under
    their tables' headers; the newest answer's rows first where they tie, since a
    record read again is the newer. Empty when the request names no rows."""
    return unshown(named(request, answers), shown)


# A row a request names: how many of its naming words the row carries, its place among
# the rows read, and the row.
Named = tuple[int, int, Record]


def named(request: frozenset[str], answers: Iterable[Sequence[Record]]) -> list[Named]:
    """The rows of ``answers`` the ``request``'s words name, each line once (its first
    row), whatever the output shows: what ``unshown`` then filters. Apart, so that a
    caller reads the output's values only when some row is named (most requests name
    none, and those values are the whole output before the request)."""
    if not request:
        return []
    rows = [r for records in answers for r in records]
    if not rows:
        return []
    seen: dict[str, int] = {}
    for row in rows:
        for word in row.names & request:
            seen[word] = seen.get(word, 0) + 1
    naming = {w for w, n in seen.items() if n <= max(1, int(len(rows) * _RARE))}
    if not naming:
        return []
    out: list[Named] = []
    lines: set[str] = set()
    for order, row in enumerate(rows):
        score = len(row.names & naming)
        if score == 0 or row.line in lines:
            continue
        lines.add(row.line)
        out.append((score, order, row))
    return out


def unshown(rows: Sequence[Named], shown: frozenset[str]) -> list[str]:
    """Of the ``named`` rows, those ``shown`` does not show already (all their values
    in it), the best named first, as lines under their tables' headers."""
    scored = [s for s in rows if not (s[2].ids and s[2].ids <= shown)]
    scored.sort(key=lambda s: (-s[0], -s[1]))
    best = scored[0][0] if scored else 0
    chosen: list[Record] = []
    used = 0
    for score, _, row in scored:
        cost = len(row.line) + 1
        if score < best - 1 or len(chosen) >= _MAX_ROWS or used + cost > ROWS_CHARS:
            break
        chosen.append(row)
        used += cost
    out: list[str] = []
    header = None
    for row in sorted(chosen, key=lambda r: r.header):
        if row.header and row.header != header:
            out.append(row.header)
        header = row.header
        out.append(f"  {row.line}" if row.header else row.line)
    return out
