"""Token counting with a per-content cache.

The encoder is handed in (the shell loads tiktoken's offline encoding) so the
engine never touches files. Counts include tool-call names and arguments and
a small per-message overhead, as the providers' own accounting does.

A text the cache has not seen is counted piece by piece when the shell also hands
in the encoding's pre-split (a ``Pretokenizer``, see ``pieces``): a BPE encoder
splits text into pieces with a regex and encodes each piece on its own, so a text's
count is the sum of its pieces' counts, and each distinct piece is encoded once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from app.engine.memo import Memo
from app.engine.pacing import EVERY_CHARS, breathe
from app.engine.transcript.model import Message

# Role markers and separators cost a few tokens per message and per call.
MESSAGE_OVERHEAD = 4
TOOL_CALL_OVERHEAD = 3


class Encoder(Protocol):
    def encode_ordinary(self, text: str) -> list[int]: ...


# A run of characters past ASCII (see ``_mixed_len``).
_PAST_ASCII = re.compile(r"[^\x00-\x7f]+")
# Stretches of lines longer than this are counted without being remembered.
_MAX_LINES = 2000
# Blanks that may open a line without joining the newline before them into one piece:
# every character Python or the encoder's regex takes for whitespace, but newlines
# (see ``_cut``). Python's set is the larger: taking one more as a blank only cuts less.
_INDENT = " \t\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680" + \
    "".join(chr(c) for c in range(0x2000, 0x200B)) + "\u2028\u2029\u202f\u205f\u3000"
_NEWLINES = "\r\n"
# A text the encoder reads itself (not ASCII, or no pre-split) is handed to it in
# stretches of about this many characters: its token list for a 15 MB text, a Python
# int per token, took 120 MB.
_STRETCH = 1 << 16

# The count of ASCII bytes by an encoding's pieces, each piece's count looked up in or
# added to the dict, the last argument counting a piece not seen yet.
PieceCount = Callable[[bytes, dict[bytes, int], Callable[[bytes], int]], int]


@dataclass(frozen=True)
class Pretokenizer:
    """How an encoding counts ASCII text piece by piece (see ``pieces``), and the token
    count of one piece. Stretches of lines with other characters go to the encoder.

    The counter also cuts a text into stretches of lines and remembers each stretch's
    count, which holds for an encoding whose pieces never run from a newline into the
    first non-blank character of the next line: cl100k's do not (its only pieces with
    a newline are whitespace or end with it; tests/adapters/test_tokenizer.py checks
    the counts against the encoder on random text and on the corpus)."""

    count: PieceCount
    piece_tokens: Callable[[bytes], int]


class TokenCounter:
    def __init__(self, encoder: Encoder, *, cache_bytes: int = 64 << 20,
                 pretokenizer: Pretokenizer | None = None, max_pieces: int = 1 << 18) -> None:
        self._encoder = encoder
        self._memo: Memo[str, int] = Memo(cache_bytes, fingerprinted=True)
        self._pretokenizer = pretokenizer
        # Each bounded by its entries (a piece is at most a few dozen bytes, a stretch
        # of lines _MAX_LINES characters): past it, it starts over.
        self._pieces: dict[bytes, int] = {}
        self._lines: dict[str, int] = {}
        self._max_pieces = max_pieces
        self._max_lines = max(max_pieces >> 4, 1)
        # The lines' table is bounded by its characters too (a full table of the
        # longest stretches held 32 MB), and both are checked as they grow, not once a
        # text: one long text of unique lines filled the table with all of its own.
        self._lines_chars = 0
        self._max_lines_chars = max(max_pieces << 2, _MAX_LINES)

    @property
    def cache(self) -> Memo[str, int]:
        return self._memo

    def _encode_len(self, text: str) -> int:
        pre = self._pretokenizer
        if pre is None:
            return self._encoded_len(text)
        ascii_text = text.isascii()
        at = text.find("\n")
        if at < 0:
            return self._pieces_len(pre, text) if ascii_text else self._encoded_len(text)
        # Lines recur (a file read twice, a result quoted in a note): the text is cut
        # where no piece can straddle, after a line's last newline when the next line
        # has a non-blank character, and each stretch is remembered whole. A text with
        # other characters is cut the same way (the rule holds for any text: see
        # ``_cut``), so its ASCII stretches, most of such a text, are counted piece by
        # piece and only the others go to the encoder (a third of a cold call's
        # counting went to the encoder for a curly quote or an emoji in a long result).
        total = 0
        start = 0
        paced = 0
        end = len(text)
        while at >= 0:
            after = at + 1
            while after < end and text[after] in _INDENT:
                after += 1
            if after < end and text[after] not in _NEWLINES:
                total += self._lines_len(pre, text[start:at + 1], ascii_text)
                start = at + 1
                if start - paced > EVERY_CHARS:
                    breathe()
                    paced = start
            at = text.find("\n", after)
        return total + self._lines_len(pre, text[start:], ascii_text)

    def _lines_len(self, pre: Pretokenizer, lines: str, ascii_text: bool) -> int:
        """``lines`` counted and remembered; ``ascii_text``: the text they come from is
        ASCII, so they are too."""
        n = self._lines.get(lines)
        if n is None:
            n = self._pieces_len(pre, lines) if ascii_text or lines.isascii() \
                else self._mixed_len(pre, lines)
            self._remember(lines, n)
        return n

    def _remember(self, text: str, n: int) -> None:
        """Keep a stretch's count in the lines' table, within its bounds."""
        size = len(text)
        if size <= _MAX_LINES:
            if len(self._lines) >= self._max_lines or \
                    self._lines_chars + size > self._max_lines_chars:
                self._lines.clear()
                self._lines_chars = 0
            self._lines[text] = n
            self._lines_chars += size

    def _mixed_len(self, pre: Pretokenizer, text: str) -> int:
        """Lines with characters past ASCII: each word that holds some (cut where no
        piece can straddle, before a space between two non-blank characters: see
        ``_cut``) goes to the encoder, its count remembered, and the ASCII between them
        is counted piece by piece. A web page or a reply with a curly quote or a dash
        on most lines had gone to the encoder whole, which counted it slower than the
        encoder's own floor; its words past ASCII recur (names, quotes, symbols)."""
        end = len(text)
        if " " not in text:  # one word
            return self._encoded_len(text)
        total = 0
        start = 0
        found = _PAST_ASCII.search(text)
        while found is not None:
            first = _word_start(text, found.start(), start)
            last = _word_end(text, found.end(), end)
            if last - first == end:  # one word (a line of a tree drawn in box characters)
                return self._encoded_len(text)
            if first > start:
                total += self._pieces_len(pre, text[start:first])
            word = text[first:last]
            n = self._lines.get(word)
            if n is None:
                n = self._encoded_len(word)
                self._remember(word, n)
            total += n
            start = last
            found = _PAST_ASCII.search(text, start) if start < end else None
        if start < end:
            total += self._pieces_len(pre, text[start:end])
        return total

    def _pieces_len(self, pre: Pretokenizer, text: str) -> int:
        end = len(text)
        total = 0
        start = 0
        while start < end:
            # A long line a stretch at a time: the pieces' table is checked between.
            stop = _cut(text, start + _STRETCH, end) if end - start > _STRETCH else end
            if len(self._pieces) > self._max_pieces:
                self._pieces.clear()
            total += pre.count(text[start:stop].encode("ascii"), self._pieces,
                               pre.piece_tokens)
            start = stop
            if start < end:
                breathe()
        return total

    def _encoded_len(self, text: str) -> int:
        """Tokens of ``text`` as the encoder counts them, a stretch at a time."""
        encode = self._encoder.encode_ordinary
        end = len(text)
        if end <= _STRETCH:
            return len(encode(text))
        total = 0
        start = 0
        while start < end:
            stop = _cut(text, start + _STRETCH, end)
            total += len(encode(text[start:stop]))
            start = stop
        return total

    def text(self, text: str) -> int:
        if not text:
            return 0
        return self._memo.get(text, self._encode_len)

    def message(self, message: Message) -> int:
        return self.messages((message,))

    def messages(self, messages: Iterable[Message]) -> int:
        # One loop over every message of every request. The memo is called as itself,
        # not as a bound method: compiled, that is a direct call instead of a Python one.
        memo, count = self._memo, self._encode_len
        total = 0
        for m in messages:
            parts = m.parts
            total += MESSAGE_OVERHEAD + max(len(parts) - 1, 0)
            for part in parts:
                if part.text:
                    total += memo.get(part.text, count)
            for call in m.tool_calls:
                total += TOOL_CALL_OVERHEAD + memo.get(call.name, count)
                if call.arguments:
                    total += memo.get(call.arguments, count)
        return total

    def exact(self, messages: Iterable[Message]) -> int:
        """Count as rendered: multi-part text joined, for decisions at the margin. The
        joined text goes through the memo too: early in a run, when little is dropped,
        every call decides at the margin, over a transcript the last call counted."""
        total = 0
        for m in messages:
            total += MESSAGE_OVERHEAD + self.text(m.text)
            for call in m.tool_calls:
                total += TOOL_CALL_OVERHEAD + self.text(call.name) + self.text(call.arguments)
        return total


def _word_start(text: str, at: int, low: int) -> int:
    """Where the word holding ``text[at]`` starts, as ``_cut`` cuts (before a space
    between two non-blank characters), not before ``low``."""
    space = text.rfind(" ", low + 1, at + 1)
    while space > low:
        if not text[space - 1].isspace() and not text[space + 1].isspace():
            return space
        space = text.rfind(" ", low + 1, space)
    return low


def _word_end(text: str, at: int, end: int) -> int:
    """Where the word running to ``text[at - 1]`` ends, as ``_word_start`` cuts."""
    space = text.find(" ", max(at, 1), end - 1)
    while space >= 0:
        if not text[space - 1].isspace() and not text[space + 1].isspace():
            return space
        space = text.find(" ", space + 1, end - 1)
    return end


def _cut(text: str, at: int, end: int) -> int:
    """The first place from ``at`` where ``text`` can be cut with no piece of the
    encoding across it, ``end`` if there is none. Within each stretch: after a newline
    that the next line's first non-blank character follows (the rule ``_encode_len``
    cuts by), else before a space between two non-blank characters, the space then
    opening the next piece."""
    while at < end:
        limit = min(at + _STRETCH, end)
        newline = text.find("\n", at, limit)
        while newline >= 0:
            after = newline + 1
            while after < end and text[after] in _INDENT:
                after += 1
            if after < end and text[after] not in _NEWLINES:
                return newline + 1
            newline = text.find("\n", after, limit) if after < limit else -1
        space = text.find(" ", max(at, 1), min(limit, end - 1))
        while space >= 0:
            if not text[space - 1].isspace() and not text[space + 1].isspace():
                return space
            space = text.find(" ", space + 1, min(limit, end - 1))
        at = limit
    return end
