"""Text as a reader sees it: characters that look alike read as one.

A fence holds only if nothing inside it can pass for its closing tag, and a model
reads ``</transcript>`` in many spellings a byte comparison misses: full-width or
mathematical letters (which NFKC folds), Cyrillic and Greek letters drawn like Latin
ones, angle quotes and slashes of other scripts, and characters that draw nothing at
all (zero-width spaces, soft hyphens, bidi controls) placed between the letters.

``skeleton`` maps every character of a text to exactly one character, so a match
in the skeleton is a span of the text itself: the escape is applied to what the
caller sent, and text that looks like no tag comes back unchanged.
"""

from __future__ import annotations

import functools
import unicodedata

# Drawn like a Latin letter in common fonts. Unicode's confusables list is longer;
# these are the lowercase and capital forms of the Cyrillic and Greek letters that
# pass for the letters of a tag name at a glance.
_LETTERS = {
    "a": "аα", "b": "ЬВβ", "c": "сϲС", "d": "ԁ", "e": "еεЕΕ", "h": "һНΗ", "i": "іιІΙӀı",
    "j": "јЈ", "k": "кКΚκ", "l": "ӏ", "m": "мМΜ", "n": "пΝη", "o": "оοОΟσ", "p": "рρРΡ",
    "q": "ԛ", "r": "г", "s": "ѕЅ", "t": "тТΤτ", "u": "υ", "v": "ν", "w": "ԝω", "x": "хχХΧ",
    "y": "уУΥ", "z": "Ζ",
}
# Opening brackets and slashes of other scripts and symbol blocks.
_OPENERS = "‹〈⟨❮＜﹤〈《"
_SLASHES = "⁄∕⧸⟋／╱"
# What stands for a character that draws nothing: a match may have any number of them
# between its parts, and they are kept, never removed, from the text.
HIDDEN = "\x00"


def skeleton(text: str) -> str:
    """``text`` with every character replaced by the one it reads as (same length)."""
    return text.translate(_table())


@functools.cache
def _table() -> dict[int, str]:
    """Built on first use: folding the Basic Multilingual Plane and the mathematical
    letters by NFKC takes a few tens of milliseconds, once per process."""
    table: dict[int, str] = {}
    for code in (*range(0x80, 0x10000), *range(0x1D400, 0x1D800), *range(0x1F130, 0x1F18A)):
        char = chr(code)
        if unicodedata.category(char) == "Cf" or char in "\u00ad\u034f\u115f\u1160\u3164":
            table[code] = HIDDEN  # format controls, soft hyphen, fillers: they draw nothing
            continue
        folded = unicodedata.normalize("NFKC", char)
        if len(folded) == 1 and folded.isascii() and folded != char:
            table[code] = folded.lower()
    for latin, alikes in _LETTERS.items():
        table.update((ord(c), latin) for c in alikes)
    table.update((ord(c), "<") for c in _OPENERS)
    table.update((ord(c), "/") for c in _SLASHES)
    table.update((ord(c), c.lower()) for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    return table
