"""A small bounded LRU map, sized by the characters of its keys.

Agents resend the same prefix on every step; memoizing per content string
makes a call cost what its new messages cost. The lock makes it safe to
share between the event loop and worker threads.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

V = TypeVar("V")
_MISSING = object()


class Memo(Generic[V]):
    def __init__(self, max_chars: int) -> None:
        self._max_chars = max_chars
        self._chars = 0
        self._items: OrderedDict[str, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str, compute: Callable[[str], V]) -> V:
        # Reads take no lock: dict lookups are atomic, and a lost recency update or
        # a duplicate computation under a race costs nothing but time.
        found = self._items.get(key, _MISSING)
        if found is not _MISSING:
            try:  # noqa: SIM105 (contextlib.suppress costs an object per hit on a hot path)
                self._items.move_to_end(key)
            except KeyError:
                pass
            return found  # type: ignore[return-value]
        value = compute(key)
        self._store(key, value)
        return value

    def _store(self, key: str, value: V) -> None:
        size = len(key) + 1
        if size > self._max_chars:
            return
        with self._lock:
            if key in self._items:
                return
            self._items[key] = value
            self._chars += size
            while self._chars > self._max_chars:
                old, _ = self._items.popitem(last=False)
                self._chars -= len(old) + 1

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._chars = 0
