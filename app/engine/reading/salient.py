"""The lines of a result worth keeping once the result itself is dropped.

A result's first line rarely holds what an agent goes on to use: the value in
the middle of a config dump, the id in an API answer, the line a grep found.
``salient`` picks, within a budget, the lines that carry facts (identifiers,
paths, numbers, ``key: value`` pairs, definitions in code), preferring lines
unlike their neighbours, so a listing of fifty similar rows gives its odd one
out rather than its first three. JSON answers are read as data instead (see
``answers``).
"""

from __future__ import annotations

from typing import Final

from app.engine.memo import CacheUsage, Memo
from app.engine.reading.outcomes import shorten

_LINE_CHARS = 160
# Where salient lines are looked for: the start and the end of a result. A note is
# made for every call of a cold request, so the search is one regex pass over a
# bounded text, not work per line.
_HEAD_CHARS = 1500
_TAIL_CHARS = 500
# A line's worth: two points per specific word (a digit, ``_``, ``/``, an inner dot,
# or all capitals), two more for ``key: value``, six for a definition in code; halved
# for every other line of the same shape, so the fiftieth row of a listing counts less
# than its odd one out. Words and shapes are read by loops over the characters, which
# the compiled module runs far faster than a regex engine would.
_DEFINES = ("def ", "class ", "async def ", "function ", "func ", "fn ")
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_ .-")
_MAX_KEY = 40
_SHAPE_CHARS = 40
# At most this many lines of one shape are chosen from a result: past the first few
# rows of a listing (the same ``def step_N(ctx):`` forty times), the budget goes to
# lines unlike them. Chosen with the eval: at tier mid recall stays within 0.1 and the
# note of a read of repetitive code is a third as long. The agent's own code is not
# limited so: each line of a script it wrote is one it chose to write.
_SHAPE_LINES = 4
_TRIM = "`'\"()[]{}<>,;:.!?*="
# ASCII lines are read as bytes (see _specific_words and _shape). Final: compiled code
# inlines them. Setting the case bit maps A-Z onto a-z and nothing else onto that range.
_LOWER_A: Final = 97
_LOWER_Z: Final = 122
_UPPER_A: Final = 65
_UPPER_Z: Final = 90
_CASE_BIT: Final = 32
_DIGIT_0: Final = 48
_DIGIT_9: Final = 57
_UNDERSCORE: Final = 95
_SLASH: Final = 47
_DOT: Final = 46
# Per byte: whitespace as str.split() sees it, a character str.strip(_TRIM) removes, or
# any other (bytes past ASCII never occur: only ASCII lines are read this way).
_OTHER_BYTE: Final = 0
_SPACE_BYTE: Final = 1
_TRIM_BYTE: Final = 2
_BYTE_CLASSES: Final = bytes(
    _SPACE_BYTE if chr(b).isspace() else _TRIM_BYTE if chr(b) in _TRIM else _OTHER_BYTE
    for b in range(128))


def _specific(word: str) -> bool:
    core = word.strip(_TRIM)
    if len(core) < 2:
        return False
    if "_" in core or "/" in core or "." in core[1:-1]:
        return True
    upper = letters = 0
    for ch in core:
        if ch.isdigit():
            return True
        if ch.isalpha():
            letters += 1
            if ch.isupper():
                upper += 1
    return upper >= 2 and upper == letters


def _is_pair(line: str) -> bool:
    """``key: value`` or ``key = value`` with a short key."""
    colon = line.find(":")
    equals = line.find("=")
    split = colon if equals < 0 or 0 <= colon < equals else equals
    if split <= 0 or split > _MAX_KEY or split == len(line) - 1:
        return False
    for ch in line[:split]:  # noqa: SIM110 - a loop compiles to C, a generator does not
        if ch not in _KEY_CHARS:
            return False
    return True


def _specific_words(line: str, found: set[str] | None = None) -> int:
    """How many words of an ASCII line are specific (see ``_specific``), read from its
    bytes: a fifth of the time splitting it into words and stripping each took. With
    ``found``, the words themselves (trimmed) are added to it."""
    data = line.encode("ascii")
    classes = _BYTE_CLASSES
    n = len(data)
    facts = 0
    i = 0
    while i < n:
        while i < n and classes[data[i]] == _SPACE_BYTE:
            i += 1
        start = i
        while i < n and classes[data[i]] != _SPACE_BYTE:
            i += 1
        end = i
        while start < end and classes[data[start]] == _TRIM_BYTE:  # word.strip(_TRIM)
            start += 1
        while end > start and classes[data[end - 1]] == _TRIM_BYTE:
            end -= 1
        if end - start < 2:
            continue
        upper = letters = 0
        specific = False
        for j in range(start, end):
            byte = data[j]
            # Compared one by one: compiled, integers are tested without building a tuple.
            if byte == _UNDERSCORE or byte == _SLASH or _DIGIT_0 <= byte <= _DIGIT_9 \
                    or (byte == _DOT and start < j < end - 1):  # noqa: SIM109
                specific = True
                break
            if _UPPER_A <= byte <= _UPPER_Z:
                upper += 1
                letters += 1
            elif _LOWER_A <= byte <= _LOWER_Z:
                letters += 1
        if specific or (upper >= 2 and upper == letters):
            facts += 1
            if found is not None:
                found.add(line[start:end])  # ASCII: byte and character offsets agree
    return facts


def _score(line: str) -> int:
    if line.isascii():
        facts = _specific_words(line)
    else:
        facts = 0
        for word in line.split():
            if _specific(word):
                facts += 1
    if not facts:
        return 0  # a line with no identifier, path or number holds no fact to keep
    score = 2 * facts
    if _is_pair(line):
        score += 2
    if line.startswith(_DEFINES):
        score += 6
    return score


def _shape(line: str) -> str:
    """Runs of letters as ``a``, of digits as ``9``, other characters as they are: the
    rows of one listing share a shape (``replica_18: 7352 quota ok``)."""
    part = line[: _SHAPE_CHARS * 2]
    if not part.isascii():
        return _shape_text(part)
    # Most lines are ASCII: their bytes are read as integers, which compiled code
    # compares without a string object per character, and the reading stops once the
    # shape is long enough (together, a third less time).
    out: list[int] = []
    last = -1
    for byte in part.encode("ascii"):
        if _LOWER_A <= byte | _CASE_BIT <= _LOWER_Z:  # only letters land in a-z
            kind = _LOWER_A
        elif _DIGIT_0 <= byte <= _DIGIT_9:
            kind = _DIGIT_9
        else:
            kind = byte
        if kind != last or (kind != _LOWER_A and kind != _DIGIT_9):
            out.append(kind)
            if len(out) == _SHAPE_CHARS:
                break
        last = kind
    return bytes(out).decode("ascii")


def _shape_text(part: str) -> str:
    """``_shape`` read from characters, for a line with any past ASCII."""
    out: list[str] = []
    last = ""
    for ch in part:
        kind = "a" if ch.isalpha() else "9" if ch.isdigit() else ch
        if kind != last or kind not in "a9":
            out.append(kind)
        last = kind
    return "".join(out)[:_SHAPE_CHARS]


def text_lines(text: str, limit: int, skip: str = "", *,
               per_shape: int = _SHAPE_LINES) -> list[str]:
    """Up to ``limit`` characters of the lines of ``text`` worth most, shown in their
    order. ``skip`` (the line the note shows already) is left out."""
    if limit <= 0:
        return []
    return chosen_lines(ranked_lines(text, skip), limit, per_shape=per_shape)


# A line worth keeping: its position in the text, the line and its shape.
Ranked = list[tuple[int, str, str]]


def ranked_lines(text: str, skip: str = "") -> Ranked:
    """The lines of ``text`` that carry a fact, best first, each with its position and
    shape (see ``text_lines``); read once, they can be chosen from for several budgets."""
    window = text if len(text) <= _HEAD_CHARS + _TAIL_CHARS else _window(text)
    scored: list[tuple[int, int, str, str]] = []
    shapes: dict[str, int] = {}
    start = 0
    while start < len(window):
        end = window.find("\n", start)
        if end < 0:
            end = len(window)
        shown = window[start:end].rstrip()
        line = shown.lstrip()
        # Bare wrapper tags (<output>, </output>, <returncode>0</returncode>) hold no fact,
        # nor does a script's interpreter line (#!/usr/bin/env python3).
        bare_tag = line.startswith("<") and line.endswith(">") and " " not in line
        if line and line != skip and not bare_tag and not line.startswith("#!"):
            score = _score(line)
            if score:
                shape = _shape(line)
                shapes[shape] = shapes.get(shape, 0) + 1
                # Shown with its indentation: in code it is meaning (which block a line
                # belongs to), and a note's reader may copy the line back into an edit.
                scored.append((score, start, shown, shape))
        start = end + 1
    ranked = sorted([(-(score * 2 // shapes[shape] + score), at, line, shape)
                     for score, at, line, shape in scored])
    return [(at, line, shape) for _, at, line, shape in ranked]


def short_lines(text: str, limit: int) -> list[str]:
    """The lines of ``text`` that ``ranked_lines`` reads, of at most ``limit``
    characters: the only ones a choice within ``limit`` characters can take. A caller
    that wants few such lines can look at these first and skip the ranking when none
    would do (an aged read's ``key: value`` lines, which most reads have none of)."""
    window = text if len(text) <= _HEAD_CHARS + _TAIL_CHARS else _window(text)
    out: list[str] = []
    start = 0
    while start < len(window):
        end = window.find("\n", start)
        if end < 0:
            end = len(window)
        if end - start <= limit or len(window[start:end].strip()) <= limit:
            out.append(window[start:end].strip())
        start = end + 1
    return out


def _window(text: str) -> str:
    """The start and the end of a long text, each cut where a line ends: a line cut in
    two would show a fragment of a name (``nitial_state``), no fact."""
    head = text.rfind("\n", 0, _HEAD_CHARS)
    tail = text.find("\n", len(text) - _TAIL_CHARS)
    return text[: head if head >= 0 else _HEAD_CHARS] + "\n" + \
        text[tail + 1 if tail >= 0 else len(text) - _TAIL_CHARS :]


def chosen_lines(ranked: Ranked, limit: int, *, per_shape: int = _SHAPE_LINES) -> list[str]:
    """The best of ``ranked`` within ``limit`` characters, in their order in the text.

    A line is left out when every specific word in it is in a line already chosen (the
    same line again, a second "name_1 = 4096" after "name_1: 4096"), or when
    ``per_shape`` lines of its shape are (0: no such limit): its budget goes to a line
    that says something new."""
    chosen: list[tuple[int, str]] = []
    used = 0
    shown_words: set[str] = set()
    of_shapes: dict[str, int] = {}
    for at, line, shape in ranked:
        shown = shorten(line, _LINE_CHARS)
        if used + len(shown) - _indent(shown) > limit:
            continue
        of_shape = of_shapes.get(shape, 0)
        if per_shape and of_shape >= per_shape:
            continue
        words = _specifics(line)
        if words <= shown_words:
            continue
        shown_words |= words
        of_shapes[shape] = of_shape + 1
        chosen.append((at, shown))
        used += len(shown) - _indent(shown) + 1
    # The indentation every chosen line shares costs room and says nothing; what is
    # left still shows which block each line belongs to.
    margin = min((_indent(line) for _, line in chosen), default=0)
    return [line[margin:] for _, line in sorted(chosen)]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _specifics(line: str) -> set[str]:
    """The specific words of ``line``, trimmed (see ``_specific``)."""
    if line.isascii():
        found: set[str] = set()
        _specific_words(line, found)
        return found
    return {word.strip(_TRIM) for word in line.split() if _specific(word)}


class SalientLines:
    """``text_lines`` memoized: the recent results a call cuts are cut again, the same
    way, on every later call until their block closes."""

    def __init__(self, *, cache_bytes: int = 16 << 20) -> None:
        self._memo: Memo[tuple[str, int, str], tuple[str, ...]] = Memo(
            cache_bytes, fingerprinted=True)

    @property
    def usage(self) -> CacheUsage:
        return self._memo.usage

    def of(self, text: str, limit: int, skip: str = "") -> tuple[str, ...]:
        return self._memo.get((text, limit, skip), _lines)


def _lines(key: tuple[str, int, str]) -> tuple[str, ...]:
    return tuple(text_lines(*key))
