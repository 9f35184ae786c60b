"""Facts an agent may need later: paths, identifiers, numbers and error lines.

The receipt lists facts that were in dropped text and are nowhere in the
output, so a caller can see what compaction cost. The work is shaped for
speed: each text becomes a set of raw tokens, as UTF-8 bytes because
bytes.translate and bytes.split run in C several times faster than their str
counterparts (quotes, brackets and separators become spaces), memoized per
text.
Lost tokens are one set difference, and only those are classified.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from app.engine.memo import Memo

# Commas stay inside tokens (1,234.50) and are stripped from their ends, as is a
# currency sign, so "$121" in a note keeps the 121 of a dropped price.
_SEPARATOR_CHARS = b"\"'`()[]{}<>=;|"
_SEPARATORS = bytes.maketrans(_SEPARATOR_CHARS, b" " * len(_SEPARATOR_CHARS))
_STRIP = b".,:*!?$"
_DIGIT = re.compile(r"\d")
_EXTENSIONS = frozenset({
    "py", "js", "ts", "tsx", "go", "rs", "java", "rb", "c", "h", "cpp", "md", "json", "yaml",
    "yml", "toml", "txt", "cfg", "ini", "sh", "html", "css", "sql", "csv", "log", "xml", "lock",
})
_NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d{3,}(?:\.\d+)?|\d+\.\d+")
_IDENT = re.compile(r"[A-Za-z_][\w-]*\d[\w-]*|\d+[A-Za-z_][\w-]*")
_ERROR_WORDS = ("rror", "xception", "ailed", "FAILED", "Traceback")
_ERROR_MARK = re.compile(r"Error|Exception|error:|failed|FAILED|Traceback")
_MAX_TOKEN = 200
_MAX_ERRORS = 20


@dataclass(frozen=True, slots=True)
class Facts:
    paths: frozenset[str] = frozenset()
    identifiers: frozenset[str] = frozenset()
    numbers: frozenset[str] = frozenset()
    errors: frozenset[str] = frozenset()

    def __len__(self) -> int:
        return len(self.paths) + len(self.identifiers) + len(self.numbers) + len(self.errors)


def raw_tokens(text: str) -> frozenset[bytes]:
    # Plain words are the bulk of any text and never a fact here.
    data = text.encode("utf-8", "surrogatepass").translate(_SEPARATORS)
    return frozenset(t.strip(_STRIP) for t in data.split() if not t.isalpha())


def error_lines(text: str) -> frozenset[str]:
    if not any(word in text for word in _ERROR_WORDS):
        return frozenset()
    found: set[str] = set()
    line_end = -1
    for mark in _ERROR_MARK.finditer(text):
        if mark.start() < line_end:
            continue  # another mark on a line already taken
        start = text.rfind("\n", 0, mark.start()) + 1
        line_end = text.find("\n", mark.end())
        if line_end < 0:
            line_end = len(text)
        found.add(text[start:line_end].strip()[:_MAX_TOKEN])
        if len(found) >= _MAX_ERRORS:
            break
    return frozenset(found)


# What a token is; NONE for tokens that are no fact.
NONE, PATH, IDENT, NUMBER = 0, 1, 2, 3


def kind_of(raw: bytes) -> int:
    token = raw.decode("utf-8", "replace")
    if len(token) > _MAX_TOKEN or len(token) < 3:
        return NONE
    if "/" in token:
        return PATH if "://" not in token else NONE
    if _DIGIT.search(token) is None:
        dot = token.rfind(".")
        return PATH if dot > 0 and token[dot + 1 :] in _EXTENSIONS else NONE
    if _NUMBER.fullmatch(token):
        return NUMBER
    if len(token) >= 5 and _IDENT.fullmatch(token):
        return IDENT
    return NONE


class FactExtractor:
    def __init__(self, *, cache_chars: int = 32_000_000, cache_tokens: int = 500_000) -> None:
        self._tokens: Memo[frozenset[bytes]] = Memo(cache_chars)
        self._errors: Memo[frozenset[str]] = Memo(cache_chars)
        # The same ids and paths recur across steps; remember what each token is.
        self._kinds: dict[bytes, int] = {}
        self._max_kinds = cache_tokens

    def classify(self, tokens: Iterable[bytes]) -> Facts:
        found: tuple[set[str], set[str], set[str], set[str]] = (set(), set(), set(), set())
        kinds = self._kinds
        for raw in tokens:
            kind = kinds.get(raw)
            if kind is None:
                kind = kind_of(raw)
                if len(kinds) >= self._max_kinds:
                    kinds.clear()
                kinds[raw] = kind
            if kind:
                found[kind].add(raw.decode("utf-8", "replace"))
        return Facts(frozenset(found[PATH]), frozenset(found[IDENT]), frozenset(found[NUMBER]))

    def lost(self, dropped: Iterable[str], kept: Iterable[str]) -> Facts:
        """Facts of the dropped texts that occur nowhere in the kept ones."""
        kept = [t for t in kept if t]
        dropped = [t for t in dropped if t]
        tokens = self._tokens
        gone = frozenset().union(*(tokens.get(t, raw_tokens) for t in dropped))
        gone = gone.difference(*(tokens.get(t, raw_tokens) for t in kept))
        errors = frozenset().union(*(self._errors.get(t, error_lines) for t in dropped))
        if not gone and not errors:
            return Facts()
        facts = self.classify(gone)
        if errors:
            # An error line often survives inside a note line; only report real losses.
            output = "\n".join(kept)
            errors = frozenset(e for e in errors if e not in output)
        return Facts(facts.paths, facts.identifiers, facts.numbers, errors)
