"""A small bounded memo, sized by the characters of its keys.

Agents resend the same prefix on every step; memoizing per content string
makes a call cost what its new messages cost. A warm call makes hundreds of
lookups, so a hit is one plain dict lookup: instead of exact LRU order the
memo keeps two generations. New entries go to the young one; a hit in the
old one moves the entry up; when the young generation is full it becomes the
old one and the previous old one is dropped. What a caller still uses
survives, what nobody asked for over a whole generation goes.

The lock guards the generation swap; reads take none (a read that races a
swap misses and recomputes, which costs time and nothing else).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar, cast

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
_MISSING = object()


class Memo(Generic[K, V]):
    """``weigh`` gives a key's size in characters; without it keys must have a length."""

    def __init__(self, max_chars: int, weigh: Callable[[K], int] | None = None) -> None:
        # Each generation holds up to half, so both together stay within the bound.
        self._generation_chars = max(max_chars // 2, 1)
        self._weigh: Callable[[K], int] = weigh or cast(Callable[[K], int], len)
        self._young: dict[K, V] = {}
        self._old: dict[K, V] = {}
        self._chars = 0
        self._lock = threading.Lock()

    def get(self, key: K, compute: Callable[[K], V]) -> V:
        found = self._young.get(key, _MISSING)
        if found is not _MISSING:
            return found  # type: ignore[return-value]
        found = self._old.get(key, _MISSING)
        if found is _MISSING:
            found = compute(key)
        self._store(key, found)  # type: ignore[arg-type]
        return found  # type: ignore[return-value]

    def _store(self, key: K, value: V) -> None:
        size = self._weigh(key) + 1
        if size > self._generation_chars:
            return
        with self._lock:
            if self._chars + size > self._generation_chars:
                self._old = self._young
                self._young = {}
                self._chars = 0
            if key not in self._young:
                self._young[key] = value
                self._chars += size

    def __len__(self) -> int:
        return len(self._young.keys() | self._old.keys())

    def clear(self) -> None:
        with self._lock:
            self._young = {}
            self._old = {}
            self._chars = 0
