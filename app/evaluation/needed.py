"""Needed facts: what an agent goes on to use that it learned from its own work.

At step k (the call that produces ``messages[k]``, an assistant message) the
agent's later behaviour shows what it needed from before k. The extraction:

1. **Specific tokens.** Words of identifier shape: at least 3 characters and
   a digit, an underscore, a slash, an inner dot between two-character parts
   (``config.py``, ``os.path``; not ``e.g``),
   or a capital letter after the first (``JG7FMM``, ``getUser``). Plain words
   carry no fact, and are left out. Trailing dots and dashes are trimmed.
2. **Used later.** The specific tokens of every assistant message from k on:
   its text and the string values of its tool-call arguments.
3. **Learned from the work.** Kept only if they occur in the work before k (the
   tool results and the agent's own messages and arguments) and in no system or
   user message before k: what the user or the system prompt said is not
   something the agent had to learn, and compactors keep those verbatim anyway.

Recall at step k is the share of those needed tokens that occur, as tokens, in
the compacted context. Over a run, or the corpus, the shares are pooled: the
sum of needed tokens found over the sum of needed tokens.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from app.evaluation.seen import Wire, readable_text

_WORD = re.compile(r"(?:\.{1,2}/|/|~/)?[A-Za-z0-9_][A-Za-z0-9_./\-]*")
_INNER_DOT = re.compile(r"[A-Za-z0-9_]{2}\.[A-Za-z0-9_]{2}")  # not "e.g"


def _specific(word: str) -> bool:
    if len(word) < 3:
        return False
    if any(c.isdigit() for c in word) or "_" in word or "/" in word:
        return True
    if _INNER_DOT.search(word):
        return True
    return any(c.isupper() for c in word[1:])


def specific_tokens(text: str) -> set[str]:
    out = set()
    for match in _WORD.finditer(text):
        word = match.group(0).rstrip(".-/")
        if _specific(word):
            out.add(word)
    return out


class TokenSets:
    """Specific tokens per text, memoized: the same messages come back at every step."""

    def __init__(self) -> None:
        self._memo: dict[str, frozenset[str]] = {}

    def of_text(self, text: str) -> frozenset[str]:
        found = self._memo.get(text)
        if found is None:
            found = frozenset(specific_tokens(text))
            self._memo[text] = found
        return found

    def of(self, message: Wire) -> frozenset[str]:
        return self.of_text(readable_text(message))

    def union(self, messages: Iterable[Wire]) -> set[str]:
        out: set[str] = set()
        for m in messages:
            out |= self.of(m)
        return out


def needed(messages: Sequence[Wire], k: int, sets: TokenSets) -> set[str]:
    """The tokens the agent used from step ``k`` on that it had learned before k."""
    later = sets.union(m for m in messages[k:] if m.get("role") == "assistant")
    given = sets.union(m for m in messages[:k] if m.get("role") in ("system", "user"))
    learned = sets.union(m for m in messages[:k] if m.get("role") in ("assistant", "tool"))
    return (later & learned) - given


def found(needed_tokens: set[str], context: Sequence[Wire], sets: TokenSets) -> int:
    """How many of the needed tokens occur in the compacted context."""
    if not needed_tokens:
        return 0
    return len(needed_tokens & sets.union(context))
