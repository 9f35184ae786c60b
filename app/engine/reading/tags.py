"""Markup elements in text, found by their tags: an opening tag, and the first closing
tag of its name after it.

These are what the regexes ``<([a-z][a-z0-9_]*)>(.*?)</\\1>`` (DOTALL) and its forms
anchored at a line's start find, match for match. A lazy ``.*?`` tries the closing tag
at every character of an element's content, and of the whole rest of the text for a
tag never closed (an ``<int>`` in an error line, markup quoted in a file): reading an
agent's actions and a harness's blocks so was a tenth of a cold call's time. Here the
regex finds only the opening tags, and ``str.find`` looks for the closing one, in C.
"""

from __future__ import annotations

import re
from typing import Final

_OPEN = re.compile(r"<([a-z][a-z0-9_]*)>")
# An opening tag the rest of its line leaves alone (a block's, see ``line_blocks``).
_OPEN_LINE = re.compile(r"<([a-z][a-z0-9_]*)>[ \t]*\n")
_BLANKS: Final = " \t"

# An element: its tag, where it starts (its line's start, for an anchored one), where
# its content starts and ends, and where it ends (past its closing tag).
Element = tuple[str, int, int, int, int]


def elements(text: str, *, line_start: bool = False, first: bool = False) -> list[Element]:
    """The elements of ``text`` in order, none inside another: as ``finditer`` of
    ``<(tag)>(.*?)</\\1>`` (DOTALL) finds them; ``line_start``: of
    ``^[ \\t]*<(tag)>(.*?)</\\1>`` (MULTILINE), an element whose opening tag only blanks
    precede on its line, starting at the line's start; ``first``: the first only."""
    found: list[Element] = []
    floor = 0  # where the last element ended: the next starts there or later
    at = 0
    while True:
        opening = _OPEN.search(text, at)
        if opening is None:
            return found
        tag = opening.group(1)
        start = opening.start()
        if line_start:
            line = text.rfind("\n", 0, start) + 1
            if line < floor or not _blank(text, line, start):
                at = start + 1
                continue
            start = line
        content = opening.end()
        close = text.find(f"</{tag}>", content)
        if close < 0:  # never closed: no element opens here
            at = opening.start() + 1
            continue
        end = close + len(tag) + 3
        found.append((tag, start, content, close, end))
        if first:
            return found
        floor = at = end


def line_blocks(text: str) -> list[tuple[str, int, int]]:
    """The blocks of ``text`` on lines of their own, each as its tag, start and end: as
    ``finditer`` of ``^[ \\t]*<(tag)>[ \\t]*\\n.*?^[ \\t]*</\\1>[ \\t]*$\\n?`` (MULTILINE,
    DOTALL) finds them. A block opens with its tag alone on a line (blanks aside) and
    closes at the first line after it that holds its closing tag alone, the newline after
    that line included."""
    found: list[tuple[str, int, int]] = []
    size = len(text)
    floor = 0
    at = 0
    while True:
        opening = _OPEN_LINE.search(text, at)
        if opening is None:
            return found
        start = opening.start()
        line = text.rfind("\n", 0, start) + 1
        if line < floor or not _blank(text, line, start):
            at = start + 1
            continue
        closing = f"</{opening.group(1)}>"
        end = -1
        close = text.find(closing, opening.end())
        while close >= 0:
            after = close + len(closing)
            while after < size and text[after] in _BLANKS:
                after += 1
            if (after == size or text[after] == "\n") and \
                    _blank(text, text.rfind("\n", 0, close) + 1, close):
                end = after + 1 if after < size else after
                break
            close = text.find(closing, close + 1)
        if end < 0:  # never closed on a line of its own: no block opens here
            at = start + 1
            continue
        found.append((opening.group(1), line, end))
        floor = at = end


def _blank(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` holds only spaces and tabs (or nothing): a line's
    indent, a few characters."""
    return not text[start:end].strip(_BLANKS)


_FENCE = "```"
# A fence that opens a block: its language, then the end of its line. The blocks are
# those of the regex ```([\w+-]*)[ \t]*\n(.*?)\n?``` (DOTALL), whose lazy code tried the
# closing fence at every character.
_OPEN_FENCE = re.compile(r"```([\w+-]*)[ \t]*\n")

# A fenced block: where it starts and ends, its language, and where its code starts and
# ends (the newline before the closing fence is not code).
Fenced = tuple[int, int, str, int, int]


def fenced_blocks(text: str) -> list[Fenced]:
    """The fenced code blocks of ``text`` in order, as ``finditer`` of the regex that
    ``_OPEN_FENCE``'s comment gives finds them: a block closes at the first fence after
    its opening line (its code without the newline before that fence); a fence never
    closed opens none."""
    found: list[Fenced] = []
    at = 0
    while True:
        opening = _OPEN_FENCE.search(text, at)
        if opening is None:
            return found
        code = opening.end()
        close = text.find(_FENCE, code)
        if close < 0:
            at = opening.start() + 1
            continue
        # The lazy code stops before a newline that the closing fence follows.
        code_end = close - 1 if close > code and text[close - 1] == "\n" else close
        end = close + len(_FENCE)
        found.append((opening.start(), end, opening.group(1), code, code_end))
        at = end
