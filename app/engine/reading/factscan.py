"""Reading facts out of text: candidate tokens, error lines and the kind of each token.

Texts become sets of candidate tokens in one pass over their UTF-8 bytes, a loop
that mypyc compiles to C (see setup.py); only tokens with a digit, a slash or a dot
are kept. Error lines are found with ``str.find`` per marker. A token's kind (path,
identifier, number or no fact) is decided once and remembered (``Kinds``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sized
from typing import Final

from app.engine.footprint import BYTES_HEADER, footprint
from app.engine.pacing import EVERY_CHARS, breathe

# Tokens end at whitespace, quotes, brackets, "=", ";" and "|". Commas stay inside
# tokens (1,234.50) and are stripped from their ends, as is a currency sign, so "$121"
# in a note keeps the 121 of a dropped price.
_SEPARATOR_CHARS = b" \"'`()[]{}<>=;|\t\n\r\x0b\x0c"
_STRIP: Final = b".,:*!?$"
# Every fact has a digit, a slash or a file extension's dot.
_FACT_CHARS = b"0123456789/."
# The class of each byte value, for the scan: plain, fact or separator.
# Final: compiled code inlines them instead of looking them up per byte.
_PLAIN_BYTE: Final = 0
_FACT_BYTE: Final = 1
_SEPARATOR_BYTE: Final = 2
_BYTE_CLASS: Final = bytes(
    _SEPARATOR_BYTE if b in _SEPARATOR_CHARS else _FACT_BYTE if b in _FACT_CHARS else _PLAIN_BYTE
    for b in range(256))
_EXTENSIONS = (
    "py", "js", "ts", "tsx", "go", "rs", "java", "rb", "c", "h", "cpp", "md", "json", "yaml",
    "yml", "toml", "txt", "cfg", "ini", "sh", "html", "css", "sql", "csv", "log", "xml", "lock",
)
# Facts by kind: only a path has a slash, a file name has no digit and ends in a
# known extension, numbers and identifiers have a digit and differ in whether a
# letter occurs. Digits and word characters are ASCII ones.
_FILE_SUFFIXES = tuple(b"." + e.encode() for e in _EXTENSIONS)
_NUMBER = re.compile(rb"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d{3,}(?:\.\d+)?|\d+\.\d+")
_IDENT = re.compile(rb"[A-Za-z_][\w-]*\d[\w-]*|\d+[A-Za-z_][\w-]*")
_MIN_IDENT = 5
_SLASH: Final = 47  # b"/"
_DIGIT_0: Final = 48
_DIGIT_9: Final = 57
# Markers of an error line, found with str.find: a regex scan of every position of a
# long log costs several times more.
_TRACEBACK_HEADER = "Traceback (most recent call last)"
_ERROR_MARKS = ("Error", "Exception", "error:", "failed", "FAILED", "Traceback")
# Fewer needles that every marker contains: most texts have none, and this is the
# cheapest way to say so.
_ERROR_HINTS = ("rror", "xception", "ailed", "FAILED", "Traceback")
_MIN_TOKEN = 3
_MAX_TOKEN = 200
# Tokens sorted, and tokens looked up, between two breaths (see ``pacing``): a
# millisecond or so of each.
_PACE_TOKENS: Final = 4095
_PACE_KNOWN: Final = 16383
# Most distinct candidate tokens, or error lines, read from one text and merged from
# many: each costs about 500 bytes through a receipt's sets, tables and texts, so a body
# of short distinct facts (a 15 MB log of "error: 123" lines, or of paths) held 24
# times its size; bounded, a receipt's reading holds a few MB at most. The longest
# real runs in the corpus hold about 2,000 of them. A set this full may lack members:
# the receipt says it is incomplete (see ``facts.Facts.complete``).
MOST_FACTS: Final = 10_000


def full(found: Sized) -> bool:
    """Whether a set of tokens or error lines reached ``MOST_FACTS`` and may lack some."""
    return len(found) >= MOST_FACTS


def _candidates(data: bytes) -> set[bytes]:
    """Distinct tokens of ``data`` that may be facts, ends stripped; the first
    ``MOST_FACTS`` of them.

    One pass, byte by byte: compiled, this costs a few instructions a byte and
    allocates only the candidates, where splitting would allocate every word. Each is
    hashed into the set as it is found, so that the pass breathes (see ``pacing``)
    over the whole of the work, the set's included.
    """
    found: set[bytes] = set()
    classes = _BYTE_CLASS
    start = 0
    fact = False
    size = len(data)
    for stretch in range(0, size, EVERY_CHARS):
        if stretch:
            breathe()
        for i in range(stretch, min(stretch + EVERY_CHARS, size)):
            kind = classes[data[i]]
            if kind == _SEPARATOR_BYTE:
                if fact:
                    found.add(data[start:i].strip(_STRIP))
                    fact = False
                    if len(found) >= MOST_FACTS:
                        return found
                start = i + 1
            elif kind == _FACT_BYTE:
                fact = True
    if fact:
        found.add(data[start:].strip(_STRIP))
    return found


def raw_tokens(text: str) -> frozenset[bytes]:
    return frozenset(_candidates(text.encode("utf-8", "surrogatepass")))


def marked_lines(text: str) -> str:
    """The lines that carry an error marker, whole, one per line.

    Each marker is found with str.find from one marked line's end to the next, so
    a long log costs a few scans in C and Python work per marked line only.
    """
    return "\n".join(_marked(text, None, as_errors=False))


def _marked(text: str, most: int | None, *, as_errors: bool) -> set[str]:
    """Distinct marked lines of ``text``, found in the order of the markers, at most
    ``most`` of them: whole, or ``as_errors`` stripped, cut to a length and without a
    traceback's header (it says only that something failed; its last line says what).
    Counted as they are kept, so a set short of ``most`` holds every one."""
    found: set[str] = set()
    if not any(hint in text for hint in _ERROR_HINTS):
        return found
    paced = 0
    for mark in _ERROR_MARKS:
        at = text.find(mark)
        while at >= 0:
            start = text.rfind("\n", 0, at) + 1
            end = text.find("\n", at)
            if end < 0:
                end = len(text)
            line = text[start:end]
            if as_errors:
                line = line.strip()
                if line.startswith(_TRACEBACK_HEADER):
                    line = ""
                line = line[:_MAX_TOKEN]
            if line or not as_errors:
                found.add(line)
            if most is not None and len(found) >= most:
                return found
            at = text.find(mark, end)
            if end - paced > EVERY_CHARS:
                breathe()
                paced = end
        paced = 0
    return found


def error_lines(text: str) -> frozenset[str]:
    """The distinct lines that carry an error marker, stripped and cut to a length; up
    to ``MOST_FACTS`` of them."""
    # From the marked lines themselves, not their joined text split again: a log of
    # error lines (a 15 MB one was) held them twice more.
    return frozenset(_marked(text, MOST_FACTS, as_errors=True))


def _fits(raw: bytes, shortest: int = _MIN_TOKEN) -> bool:
    """Whether the token's length in characters is in bounds (ASCII: its byte length)."""
    size = len(raw) if raw.isascii() else len(raw.decode("utf-8", "replace"))
    return shortest <= size <= _MAX_TOKEN


def sort_tokens(tokens: Iterable[bytes]) -> tuple[set[bytes], set[bytes], set[bytes]]:
    """Paths, identifiers and numbers among ``tokens``; the rest is no fact.

    A loop over each token's bytes, which compiled costs a few instructions a byte."""
    paths: set[bytes] = set()
    idents: set[bytes] = set()
    numbers: set[bytes] = set()
    for n, raw in enumerate(tokens):
        if n & _PACE_TOKENS == _PACE_TOKENS:
            breathe()
        slash = digit = False
        for byte in raw:
            if byte == _SLASH:
                slash = True
                break
            if _DIGIT_0 <= byte <= _DIGIT_9:
                digit = True
        if slash:
            if b"://" not in raw and _fits(raw):
                paths.add(raw)
        elif digit:
            if _NUMBER.fullmatch(raw) is not None:
                if _fits(raw):
                    numbers.add(raw)
            elif _IDENT.fullmatch(raw) is not None and _fits(raw, _MIN_IDENT):
                idents.add(raw)
        elif raw.endswith(_FILE_SUFFIXES) and raw.rfind(b".") > 0 and _fits(raw):
            paths.add(raw)
    return paths, idents, numbers


_NO_FACT: Final = -1


class _Table:
    """Kinds of the tokens seen so far (an index into sort_tokens' tuple, or _NO_FACT),
    and the text of each fact, decoded once."""

    def __init__(self) -> None:
        self.kinds: dict[bytes, int] = {}
        self.texts: dict[bytes, str] = {}
        self.bytes = 0


# A table's dict slot per token or text, besides the objects: hash, key and value
# pointers and the index, at the dicts' usual fill (the objects are measured).
_SLOT_BYTES: Final = 40

# Facts by kind (paths, identifiers, numbers), each token with its text.
Sorted = tuple[dict[bytes, str], dict[bytes, str], dict[bytes, str]]


class Kinds:
    """The kind of every token seen so far, so a call sorts only new tokens; the table
    starts over past ``max_bytes`` (its tokens, texts and dict slots)."""

    def __init__(self, max_bytes: int) -> None:
        self._max_bytes = max_bytes
        self._table = _Table()

    @property
    def held(self) -> int:
        return self._table.bytes

    def sort(self, tokens: Iterable[bytes]) -> Sorted:
        """The facts among ``tokens``, by kind, each with its text."""
        table = self._table
        kinds, texts = table.kinds, table.texts
        found: Sorted = ({}, {}, {})
        new: list[bytes] = []
        for n, raw in enumerate(tokens):  # after the first calls of a run, almost all are known
            if n & _PACE_KNOWN == _PACE_KNOWN:
                breathe()
            kind = kinds.get(raw)
            if kind is None:
                new.append(raw)
            elif kind != _NO_FACT:
                found[kind][raw] = texts[raw]
        if new:
            added = (BYTES_HEADER + _SLOT_BYTES) * len(new)
            for raw in new:
                added += len(raw)
            if table.bytes + added > self._max_bytes:
                # A new generation; another thread keeps the table it already holds.
                table = self._table = _Table()
            for kind, sorted_new in enumerate(sort_tokens(new)):
                for raw in sorted_new:
                    text = raw.decode("utf-8", "replace")
                    # Text first: a thread that sees the kind finds the text.
                    table.texts[raw] = text
                    table.kinds[raw] = kind
                    found[kind][raw] = text
                    added += footprint(text) + _SLOT_BYTES
            for raw in new:
                table.kinds.setdefault(raw, _NO_FACT)
            table.bytes += added
        return found
