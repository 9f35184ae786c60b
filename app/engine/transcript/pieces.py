"""cl100k's pre-split of ASCII text, run as one compiled pass, and the count of its pieces.

A BPE encoding cuts text into pieces with a regex and encodes each piece on its own,
so a text's token count is the sum of its pieces' counts. tiktoken runs that regex in
Rust on every call; most pieces (words, indentation, punctuation) recur all over a
transcript, so here each distinct piece is encoded once, by the encoder, and then
costs a dict lookup. For ASCII text the regex

    '(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}++|\\p{N}{1,3}+
    | ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*+|\\s++$|\\s*[\\r\\n]|\\s+(?!\\S)|\\s

comes down to a few rules on byte classes, one branch per alternative below, in the
regex's order. Letters and digits are the ASCII ones, blanks and newlines the ASCII
whitespace tiktoken's Unicode ``\\s`` knows; every other byte is "other". The scan
is a loop that mypyc compiles to C (see setup.py); tests/adapters/test_tokenizer.py
checks it against the encoder itself on random text and on the corpus.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

_OTHER: Final = 0
_LETTER: Final = 1
_DIGIT: Final = 2
_BLANK: Final = 3  # space, tab, vertical tab, form feed
_NEWLINE: Final = 4  # \r, \n
_CLASS: Final = bytes(
    _LETTER if chr(b).isascii() and chr(b).isalpha() else
    _DIGIT if 48 <= b <= 57 else
    _BLANK if b in b" \t\x0b\x0c" else
    _NEWLINE if b in b"\r\n" else _OTHER
    for b in range(256))
_QUOTE: Final = 39  # '
_SPACE: Final = 32
_LOWER: Final = 32  # or-ed into an ASCII letter, gives the lower case letter
# Pieces longer than this (a run of base64, a long rule of dashes) seldom recur and
# are counted without being remembered.
_MAX_PIECE: Final = 48


def _contraction(data: bytes, at: int, end: int) -> int:
    """The length of the contraction at ``at`` (a quote), 0 if there is none."""
    if at + 1 >= end:
        return 0
    first = data[at + 1] | _LOWER
    if first == 115 or first == 100 or first == 109 or first == 116:  # s d m t
        return 2
    if at + 2 >= end:
        return 0
    second = data[at + 2] | _LOWER
    if ((first == 108 and second == 108) or (first == 118 and second == 101)  # ll ve
            or (first == 114 and second == 101)):  # re
        return 3
    return 0


def _piece_end(data: bytes, at: int, end: int) -> int:
    """Where the piece that starts at ``at`` ends."""
    classes = _CLASS
    byte = data[at]
    kind = classes[byte]
    after = at + 1
    if byte == _QUOTE:
        size = _contraction(data, at, end)
        if size:
            return at + size
    # [^\r\n\p{L}\p{N}]?+\p{L}++: a word, after at most one blank or other byte.
    if kind == _LETTER or (kind in (_OTHER, _BLANK) and after < end
                           and classes[data[after]] == _LETTER):
        while after < end and classes[data[after]] == _LETTER:
            after += 1
        return after
    # \p{N}{1,3}+
    if kind == _DIGIT:
        while after < end and after - at < 3 and classes[data[after]] == _DIGIT:
            after += 1
        return after
    #  ?[^\s\p{L}\p{N}]++[\r\n]*+: other bytes, after at most one space, and the
    # newlines right after them.
    if kind == _OTHER or (byte == _SPACE and after < end and classes[data[after]] == _OTHER):
        while after < end and classes[data[after]] == _OTHER:
            after += 1
        while after < end and classes[data[after]] == _NEWLINE:
            after += 1
        return after
    # Whitespace: to the end of the text if it goes there (\s++$), else through its last
    # newline (\s*[\r\n]), else all but its last blank (\s+(?!\S)), else one (\s).
    last_newline = at if kind == _NEWLINE else -1
    while after < end:
        following = classes[data[after]]
        if following == _NEWLINE:
            last_newline = after
        elif following != _BLANK:
            break
        after += 1
    if after == end:
        return end
    if last_newline >= 0:
        return last_newline + 1
    return after - 1 if after - at >= 2 else after


def count_cl100k(data: bytes, known: dict[bytes, int],
                 piece_tokens: Callable[[bytes], int]) -> int:
    """Tokens of ASCII ``data`` in cl100k; ``known`` remembers each piece's count."""
    total = 0
    at = 0
    end = len(data)
    while at < end:
        stop = _piece_end(data, at, end)
        piece = data[at:stop]
        n = known.get(piece)
        if n is None:
            n = piece_tokens(piece)
            if stop - at <= _MAX_PIECE:
                known[piece] = n
        total += n
        at = stop
    return total
