"""Lines the recent turns already show: a later message points back instead of
repeating them.

Agents read the same file again after an edit, rerun a script that prints what it
printed before, and rewrite a test script with a line changed. In the recent turns
each such repeat costs its tokens again and tells the model nothing new. A run of
lines that the turns above already show, word for word, becomes one line saying so;
what is new in the message stays where it was. The lines are shown verbatim above,
so no fact is lost, and the rendering of a message depends only on the messages
before it, so a message reads the same on every call until a block closes.
"""

from __future__ import annotations

from typing import Any

from app.engine import jsontext
from app.engine.jsontext import dumps
from app.engine.memo import CacheUsage, Memo, combined
from app.engine.pacing import EVERY_CHARS, breathe
from app.engine.prompts import REPEATED_LINES

# A line with fewer characters than this (blank, a bracket, ``else:``) says too little
# to be worth pointing back to; inside a run of repeats it goes with the run.
_SUBSTANTIVE = 8
# A run is collapsed when it holds at least this many substantive lines and this many
# characters: shorter ones cost about what the line that replaces them does.
_MIN_LINES = 3
_MIN_CHARS = 160
# Most lines of one text remembered as worth pointing back to. A 2 MB log of short lines
# held 200,000 of them, several times its size, and reading them held the interpreter
# for a tenth of a second; past the bound a later repeat of its lines is only left
# as it is. The longest texts in the corpus have about 1,600 lines.
_MOST_KEYS = 10_000
# Lines walked between two breaths (see ``pacing``) when a long text is collapsed.
_PACE_LINES = 4095


class LineMemo:
    """Per text, its lines worth pointing back to; per tool-call arguments, their
    strings. The same recent turns come back on every call: they are read once.

    A text's lines are kept as their fingerprints (each line's 64-bit hash, keyed by the
    process's secret, as ``memo`` keeps keys): a line is only ever asked whether it was
    shown, and a set of the lines themselves held each recent turn again, several times
    over in small strings (line keys were the largest warm cache an agent of bench --load
    --agents --kb 40 kept, 268 KB for an 83 KB body)."""

    def __init__(self, *, cache_bytes: int = 16 << 20) -> None:
        self._keys: Memo[str, frozenset[int]] = Memo(cache_bytes // 2, fingerprinted=True)
        self._strings: Memo[str, tuple[str, ...]] = Memo(cache_bytes // 2, fingerprinted=True)

    @property
    def usage(self) -> CacheUsage:
        return combined(self._keys.usage, self._strings.usage)

    def keys(self, text: str) -> frozenset[int]:
        """The fingerprints of the text's lines worth pointing back to."""
        return self._keys.get(text, _keys)

    def strings(self, arguments: str) -> tuple[str, ...]:
        return self._strings.get(arguments, _argument_strings)


def _key(line: str) -> str | None:
    key = line.rstrip()
    return key if len(key.lstrip()) >= _SUBSTANTIVE else None


def _keys(text: str) -> frozenset[int]:
    """The fingerprints of the first ``_MOST_KEYS`` substantive lines of ``text``, each
    line made as it is read (a split held every line of a long log at once)."""
    found: set[int] = set()
    start = 0
    paced = 0
    size = len(text)
    while start <= size and len(found) < _MOST_KEYS:
        end = text.find("\n", start)
        if end < 0:
            end = size
        key = _key(text[start:end])
        if key is not None:
            found.add(hash(key))
        start = end + 1
        if start - paced > EVERY_CHARS:
            breathe()
            paced = start
    return frozenset(found)


def _argument_strings(arguments: str) -> tuple[str, ...]:
    try:
        return tuple(_strings_of(jsontext.loads(arguments)))
    except ValueError:
        return ()


class Shown:
    """The lines the output has shown so far (their fingerprints: see ``LineMemo``), for
    a later message to point back to."""

    def __init__(self, memo: LineMemo | None = None,
                 lines: frozenset[int] = frozenset()) -> None:
        self._memo = memo or LineMemo()
        self._lines: set[int] = set(lines)

    def lines(self) -> frozenset[int]:
        """What has been shown so far; a Shown made with it carries on from here."""
        return frozenset(self._lines)

    def add(self, text: str) -> None:
        """Count the lines of ``text``, as the output shows it, as shown."""
        self._lines |= self._memo.keys(text)

    def add_arguments(self, arguments: str) -> None:
        """Count the lines inside the strings of tool-call arguments as shown."""
        for text in self._memo.strings(arguments):
            self.add(text)

    def collapse(self, text: str) -> str:
        """``text`` with each long run of lines shown above replaced by one line (the
        same object when none is). The first line stays: it says what the text is (the
        command, the file written, the output's head)."""
        if self._memo.keys(text).isdisjoint(self._lines):
            return text  # most texts: nothing shown before, no need to walk their lines
        lines = text.split("\n")
        out = lines[:1]
        i = 1
        paced = 0
        while i < len(lines):
            if i - paced > _PACE_LINES:
                breathe()
                paced = i
            end, repeated, chars = self._run(lines, i)
            if repeated >= _MIN_LINES and chars >= _MIN_CHARS:
                out.append(REPEATED_LINES.format(n=end - i))
                i = end
            else:
                out.append(lines[i])
                i += 1
        return "\n".join(out) if len(out) < len(lines) else text

    def _run(self, lines: list[str], start: int) -> tuple[int, int, int]:
        """The end of the run of repeated lines from ``start`` (exclusive, after its last
        substantive line), how many substantive lines it holds and its characters."""
        end = start
        repeated = chars = 0
        i = start
        while i < len(lines):
            key = _key(lines[i])
            if key is None:
                i += 1
                continue
            if hash(key) not in self._lines:
                break
            repeated += 1
            chars += len(key) + 1
            i += 1
            end = i
        return end, repeated, chars

    def collapse_arguments(self, arguments: str) -> str:
        """Tool-call arguments with repeated runs collapsed inside their strings, still
        valid JSON; the same text when nothing repeats or the arguments are not JSON."""
        if all(self._memo.keys(text).isdisjoint(self._lines)
               for text in self._memo.strings(arguments)):
            return arguments
        try:
            value = jsontext.loads(arguments)
        except ValueError:
            return arguments
        changed = self._strings(value)
        return dumps(changed) if changed is not value else arguments

    def _strings(self, value: Any) -> Any:
        """``value`` with its strings collapsed; the same object when none changed."""
        if isinstance(value, str):
            return self.collapse(value) if "\n" in value else value
        if isinstance(value, dict):
            items = {k: self._strings(v) for k, v in value.items()}
            same = all(items[k] is v for k, v in value.items())
            return value if same else items
        if isinstance(value, list):
            seq = [self._strings(v) for v in value]
            return value if all(a is b for a, b in zip(seq, value, strict=True)) else seq
        return value


def _strings_of(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings_of(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings_of(v)]
    return []
