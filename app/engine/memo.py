"""A small bounded memo, sized by the characters of its keys.

Agents resend the same prefix on every step; memoizing per content string
makes a call cost what its new messages cost. A warm call makes hundreds of
lookups and a cold one stores thousands of entries, so both are a few dict
operations: instead of exact LRU order the memo keeps two generations. New
entries go to the young one; a hit in the old one moves the entry up; when the
young generation is full it becomes the old one and the previous old one is
dropped. What a caller still uses survives, what nobody asked for over a whole
generation goes.

No lock: each dict operation is atomic, and what threads racing on a store can
do is drop a generation early or miscount a few characters of the bound, which
costs a recomputation, never a wrong value.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar, cast

from app.engine.pacing import breathe

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
_MISSING = object()
# Reading a text this long anew takes a few milliseconds: before it, other threads may
# run (see ``pacing``).
_LONG = 32_768
# Entries up to this many characters are kept by any memo that can hold them.
_ALWAYS_KEPT = 65_536


class Usage:
    """How a cache has served: lookups it answered and those it did not, entries it let
    go to stay in its bound, and what it holds (in the unit of its bound). Plain counts
    the cache bumps; the service reads them when it is scraped."""

    def __init__(self) -> None:
        self.hits = 0
        self.misses = 0
        self.evicted = 0
        self.held = 0
        self.entries = 0


class Memo(Generic[K, V]):
    """``weigh`` gives a key's size in characters; without it keys must have a length."""

    def __init__(self, max_chars: int, weigh: Callable[[K], int] | None = None) -> None:
        # Each generation holds up to half, so both together stay within the bound.
        self._generation_chars = max(max_chars // 2, 1)
        # An entry larger than a sixteenth of a generation is computed and not kept: one
        # giant text (a 2 MB log) would push out what a generation of agents reuse, and
        # hold its request's memory long after it (its key is the request's own text).
        # Reading it again costs milliseconds. Small memos keep what fits.
        self._largest = min(self._generation_chars, max(self._generation_chars // 16,
                                                        _ALWAYS_KEPT))
        self._weigh: Callable[[K], int] = weigh or cast(Callable[[K], int], len)
        self._young: dict[K, V] = {}
        self._old: dict[K, V] = {}
        self._chars = 0
        self._old_chars = 0
        self._usage = Usage()

    @property
    def usage(self) -> Usage:
        """Hits, misses and evictions so far; held: the key characters of both
        generations; entries: both generations' (an entry in both counted twice)."""
        u = self._usage
        u.held = self._chars + self._old_chars
        u.entries = len(self._young) + len(self._old)
        return u

    def get(self, key: K, compute: Callable[[K], V]) -> V:
        found = self._young.get(key, _MISSING)
        if found is not _MISSING:
            self._usage.hits += 1
            return found  # type: ignore[return-value]
        found = self._old.get(key, _MISSING)
        size = self._weigh(key) + 1
        if found is _MISSING:
            self._usage.misses += 1
            if size > _LONG:
                breathe()
            found = compute(key)
        else:
            self._usage.hits += 1
        if size <= self._largest:
            if self._chars + size > self._generation_chars:
                self._usage.evicted += len(self._old)
                self._old, self._young = self._young, {}
                self._old_chars, self._chars = self._chars, 0
            self._young[key] = found  # type: ignore[assignment]
            self._chars += size
        return found  # type: ignore[return-value]

    def __len__(self) -> int:
        return len(self._young.keys() | self._old.keys())

    def clear(self) -> None:
        self._young, self._old, self._chars, self._old_chars = {}, {}, 0, 0
