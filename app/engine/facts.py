"""Facts an agent may need later: paths, identifiers, numbers and error lines.

The receipt lists facts that were in dropped text and are nowhere in the
output, so a caller can see what compaction cost. Extraction splits on white
space and classifies each distinct token, which is several times cheaper
than scanning with one regular expression per kind; it is memoized per text
because the same messages come back on every step.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from app.engine.memo import Memo

# Turning quotes, brackets and separators into spaces leaves paths, ids and numbers
# whole; str.translate and str.split run in C, several times faster than a regex scan.
# Commas stay inside tokens ($1,234.50) and are stripped from their ends.
_SEPARATORS = str.maketrans(dict.fromkeys("\"'`()[]{}<>=;|", " "))
_STRIP = ".,:*!?"
_DIGIT = re.compile(r"\d")
_EXTENSIONS = frozenset({
    "py", "js", "ts", "tsx", "go", "rs", "java", "rb", "c", "h", "cpp", "md", "json", "yaml",
    "yml", "toml", "txt", "cfg", "ini", "sh", "html", "css", "sql", "csv", "log", "xml", "lock",
})
_NUMBER = re.compile(r"\$?\d{1,3}(?:,\d{3})+(?:\.\d+)?|\$?\d{3,}(?:\.\d+)?|\$?\d+\.\d+")
_IDENT = re.compile(r"[A-Za-z_][\w-]*\d[\w-]*|\d+[A-Za-z_][\w-]*")
_ERROR_MARK = re.compile(r"Error|Exception|error:|failed|FAILED|Traceback")
_MAX_TOKEN = 200
_MAX_ERRORS = 20


@dataclass(frozen=True, slots=True)
class Facts:
    paths: frozenset[str] = frozenset()
    identifiers: frozenset[str] = frozenset()
    numbers: frozenset[str] = frozenset()
    errors: frozenset[str] = frozenset()

    def __sub__(self, other: Facts) -> Facts:
        return Facts(self.paths - other.paths, self.identifiers - other.identifiers,
                     self.numbers - other.numbers, self.errors - other.errors)

    def __len__(self) -> int:
        return len(self.paths) + len(self.identifiers) + len(self.numbers) + len(self.errors)


def extract(text: str) -> Facts:
    paths: set[str] = set()
    idents: set[str] = set()
    numbers: set[str] = set()
    for raw in set(text.translate(_SEPARATORS).split()):
        if raw.isalpha():
            continue  # plain words: the bulk of any text, never a fact here
        token = raw.strip(_STRIP)
        if len(token) > _MAX_TOKEN or len(token) < 3:
            continue
        if "/" in token:
            if "://" not in token:
                paths.add(token)
        elif _DIGIT.search(token) is None:
            dot = token.rfind(".")
            if dot > 0 and token[dot + 1 :] in _EXTENSIONS:
                paths.add(token)
        elif _NUMBER.fullmatch(token):
            numbers.add(token)
        elif len(token) >= 5 and _IDENT.fullmatch(token):
            idents.add(token)
    errors: set[str] = set()
    line_end = -1
    for mark in _ERROR_MARK.finditer(text):
        if mark.start() < line_end:
            continue  # another mark on a line already taken
        start = text.rfind("\n", 0, mark.start()) + 1
        line_end = text.find("\n", mark.end())
        if line_end < 0:
            line_end = len(text)
        errors.add(text[start:line_end].strip()[:_MAX_TOKEN])
        if len(errors) >= _MAX_ERRORS:
            break
    return Facts(frozenset(paths), frozenset(idents), frozenset(numbers), frozenset(errors))


class FactExtractor:
    def __init__(self, *, cache_chars: int = 32_000_000) -> None:
        self._memo: Memo[Facts] = Memo(cache_chars)

    def of(self, text: str) -> Facts:
        if not text:
            return Facts()
        return self._memo.get(text, extract)

    def union(self, texts: Iterable[str]) -> Facts:
        paths: set[str] = set()
        idents: set[str] = set()
        numbers: set[str] = set()
        errors: set[str] = set()
        for text in texts:
            f = self.of(text)
            paths |= f.paths
            idents |= f.identifiers
            numbers |= f.numbers
            errors |= f.errors
        return Facts(frozenset(paths), frozenset(idents), frozenset(numbers), frozenset(errors))
