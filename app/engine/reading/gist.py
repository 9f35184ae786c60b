"""The gist of what an agent said: the sentences that carry its state.

An agent's own statements of cause, plan and decision are the densest state a
transcript has, and the names, paths and numbers in them are what it goes on
to use. A gist keeps, in their order and within a budget, the sentences that
name something specific (backticked code, a path, a snake_case or CamelCase
name, a number or code) or use a word of cause, plan or outcome (``because``,
``fix``, ``instead``...). Sentences that only announce the next look (``Let me
check the file:``) are left out. Sentences are read in order and the reading
stops once the budget is full, so a long message costs no more than a short one.
"""

from __future__ import annotations

import re
from typing import Final

from app.engine.memo import CacheUsage, Memo
from app.engine.reading.outcomes import ELLIPSIS

_SENTENCE_END = re.compile(r"[.!?](?:\s+|$)|:[ \t]*\n|\n+")
# How far into a message a gist reads, in budgets: a message much longer than the
# budget is a wall of reasoning whose start says where it is going.
_READ = 2
# Code blocks are left out: each from its fence through the next fence or to the end
# (see ``_without_code``).
_FENCE = "```"
# Something specific: backticked code, a path, snake_case, a digit, CamelCase, a dotted
# name (file.py, module.attr).
_SPECIFIC = re.compile(r"[`/_\d]|[a-z][A-Z]|\w\.\w")
_STATE = re.compile(
    r"\b(?:because|since|bug|cause|fix|fixed|fixes|reason|fails?"
    r"|failed|failing|works?|pass|passes|passed|should|must|instead|decided?"
    r"|decision|plan|found|means|wrong|missing|expect|expects|expected|correct"
    r"|confirms?|confirmed|will)\b", re.IGNORECASE)


# Every word _STATE finds contains one of these (lowercased), so a sentence with none of
# them is not searched.
_STATE_STEMS = ("because", "since", "bug", "cause", "fix", "reason", "fail", "work", "pass",
                "should", "must", "instead", "decid", "decision", "plan", "found", "means", "wrong",
                "missing", "expect", "correct", "confirm", "will")
# For reading ASCII sentences as bytes (Final: compiled code inlines them): per byte,
# 1 for the characters that alone make a sentence specific, and 1 for ``\\w``.
_MARK_BYTES: Final = bytes(1 if chr(b) in "`/_0123456789" else 0 for b in range(128))
_WORD_BYTES: Final = bytes(1 if chr(b).isalnum() or chr(b) == "_" else 0 for b in range(128))
_DOT: Final = 46
_LOWER_A: Final = 97
_LOWER_Z: Final = 122
_UPPER_A: Final = 65
_UPPER_Z: Final = 90


# A sentence that only announces the next look ("Now let me check the `Index` class:"):
# the call beside it in the note says the same, names included.
_NARRATION = re.compile(
    r"(?:(?:now|first|next|then|also|ok(?:ay)?|great|good|perfect|excellent)[,!.]?\s+)*"
    r"(?:let me|let's|i'll|i will|i need to|we need to)\s+(?:also\s+|now\s+|first\s+|quickly\s+)?"
    r"(?:check|look|examine|see|search|view|find|inspect|explore|read|open|run|verify"
    r"|re-?run|test|understand|investigate|confirm|take a look|look at|double-check)\b",
    re.IGNORECASE)


def _priority(sentence: str) -> int:
    """2 for a sentence that names something specific, 1 for one that only states a
    cause, plan or outcome, 0 for one that says nothing a note needs."""
    if _NARRATION.match(sentence) is not None:
        return 0
    if sentence.isascii():
        # The same tests, read from the bytes, and _STATE only where one of its words
        # occurs: less than half the time the regular expressions alone took.
        if _names_something(sentence):
            return 2
        lowered = sentence.lower()
        if not any([stem in lowered for stem in _STATE_STEMS]):
            return 0
    elif _SPECIFIC.search(sentence) is not None:
        return 2
    return 1 if _STATE.search(sentence) is not None else 0


def _names_something(sentence: str) -> bool:
    """Whether _SPECIFIC occurs in an ASCII sentence."""
    data = sentence.encode("ascii")
    marks, words = _MARK_BYTES, _WORD_BYTES
    last = len(data) - 1
    for i in range(last + 1):
        byte = data[i]
        if marks[byte]:
            return True
        if i < last:
            after = data[i + 1]
            if _LOWER_A <= byte <= _LOWER_Z and _UPPER_A <= after <= _UPPER_Z:
                return True
            if byte == _DOT and i > 0 and words[data[i - 1]] and words[after]:
                return True
    return False


def gist(text: str, limit: int) -> str:
    """The sentences of ``text`` that say most, in their order, within ``limit``
    characters; empty when none says anything."""
    if _FENCE in text:
        text = _without_code(text)
    found: list[tuple[int, int, str]] = []
    start = 0
    for end in _SENTENCE_END.finditer(text + "\n"):
        sentence = " ".join(text[start : end.end()].split())
        start = end.end()
        # A list's "1." alone is no sentence.
        priority = _priority(sentence) if len(sentence) > 3 else 0
        if priority:
            found.append((-priority, len(found), sentence))
        if start > limit * _READ:
            break
    if not found:
        return ""
    found.sort()
    chosen: list[tuple[int, str]] = []
    used = 0
    for _, order, sentence in found:
        if used + len(sentence) + 1 > limit:
            continue
        chosen.append((order, sentence))
        used += len(sentence) + 1
    if not chosen:  # one long sentence: its start
        sentence = found[0][2]
        return sentence[: limit - len(ELLIPSIS)] + ELLIPSIS
    chosen.sort()
    return " ".join([sentence for _, sentence in chosen])


def _without_code(text: str) -> str:
    """``text`` with each code block a newline: a block runs from a fence through the
    next fence, or to the end (before a last newline) when none closes it, as a lazy
    regex (three backticks, ``.*?``, then three backticks or ``$``) replaced them; the
    closing fence is found with str.find instead of a scan that tries it at every
    character of the code."""
    out: list[str] = []
    at = 0
    end = len(text) - 1 if text.endswith("\n") else len(text)
    fence = text.find(_FENCE)
    while fence >= 0:
        out.append(text[at:fence])
        out.append("\n")
        close = text.find(_FENCE, fence + len(_FENCE))
        at = close + len(_FENCE) if close >= 0 else end
        fence = text.find(_FENCE, at)
    out.append(text[at:])
    return "".join(out)


class Gists:
    """``gist`` memoized: the recent turns' texts are cut again, the same way, on every
    later call until their block closes."""

    def __init__(self, *, cache_bytes: int = 16 << 20) -> None:
        self._memo: Memo[tuple[str, int], str] = Memo(cache_bytes, fingerprinted=True)

    @property
    def usage(self) -> CacheUsage:
        return self._memo.usage

    def of(self, text: str, limit: int) -> str:
        return self._memo.get((text, limit), _gist)


def _gist(key: tuple[str, int]) -> str:
    return gist(*key)
