"""A small bounded memo, sized by the bytes its keys and values hold (``footprint``).

Agents resend the same prefix on every step; memoizing per content string
makes a call cost what its new messages cost. A warm call makes hundreds of
lookups and a cold one stores thousands of entries, so both are a few dict
operations: instead of exact LRU order the memo keeps four generations, each a
quarter of its bound. New entries go to the young one; a hit in an older one moves
the entry up; when the young generation is full the oldest is dropped and each moves
down one. What a caller still uses survives, what nobody asked for over three
generations goes. With two generations (half the bound each), an entry could go
after half the bound of newer ones: a thousand agents calling in turn, each reading
its entries once a round, lost them once their entries passed half the bound; with
four they keep them up to three quarters of it.

A memo keyed by the texts a request sends may keep, instead of each key, its
fingerprint (``fingerprinted``): an agent's next call looks every text of its
history up again, and keeping those texts as keys made each such memo hold the
whole transcript once more per agent, where the next call needs only its value
(a token count, what a text reads as). The fingerprint is Python's hash of the key:
64 bits, keyed by a secret drawn for each process for texts, so two texts a call
could hold share one with a chance of about one in 10^19 for each pair (the
memos of the settled runs rest on the same hash), and a caller cannot make one
on purpose without the process's secret.

No lock: each dict operation is atomic, and what threads racing on a store can
do is drop a generation early or miscount a few bytes of the bound, which costs a
recomputation, never a wrong value.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Final, Generic, TypeVar

from app.engine.footprint import POINTER, SMALL_INT, TUPLE_HEADER, footprint
from app.engine.pacing import breathe

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
# Reading a key this large (in bytes) anew takes a few milliseconds: before it, other
# threads may run (see ``pacing``).
_LONG: Final = 32_768
# Entries up to this many bytes are kept by any memo that can hold them.
_ALWAYS_KEPT: Final = 131_072
# How many generations a memo's bound is split into (see the module's docstring).
GENERATIONS: Final = 4
# The pair an entry is kept in (its value and its size) and the size, an int.
_PAIR: Final = TUPLE_HEADER + 2 * POINTER + SMALL_INT


class CacheUsage:
    """How a cache has served: lookups it answered and those it did not, entries it let
    go to stay in its bound, and what it holds (in the unit of its bound). Plain counts
    the cache bumps; the service reads them when it is scraped."""

    def __init__(self) -> None:
        self.hits = 0
        self.misses = 0
        self.evicted = 0
        self.held = 0
        self.entries = 0


def shares(total: int, split: Mapping[str, float]) -> dict[str, int]:
    """``total`` bytes spread among caches as ``split`` says (name -> fraction)."""
    return {name: int(total * share) for name, share in split.items()}


def combined(*usages: CacheUsage) -> CacheUsage:
    """Several caches' usage as one (a reader that keeps its memos apart by what they
    hold, reported as what it serves)."""
    total = CacheUsage()
    for u in usages:
        total.hits += u.hits
        total.misses += u.misses
        total.evicted += u.evicted
        total.held += u.held
        total.entries += u.entries
    return total


def weight(key: object, value: object) -> int:
    """The bytes an entry holds: its key's and its value's footprints."""
    return footprint(key) + footprint(value)


class Memo(Generic[K, V]):
    """At most ``max_bytes`` of entries, as ``weigh`` measures an entry (by default
    ``weight``, what its key and value hold, and the pair it is kept in). ``fingerprinted``:
    entries are kept under their key's fingerprint, not the key (see the module's
    docstring), and weighed as the fingerprint and the value (``weigh``, if given, is
    handed the fingerprint).

    Each entry is kept with its size, measured once when it is stored: a hit in an older
    generation moves it up without weighing it again. Weighing every such hit walked the
    value (a block's notes, a text's token set) on most lookups once a thousand agents
    called in turn: the values' walks were half of what those calls cost past the same
    calls with every entry in the young generation (profiled in process)."""

    def __init__(self, max_bytes: int, weigh: Callable[[object, V], int] | None = None, *,
                 fingerprinted: bool = False) -> None:
        # Each generation holds up to a quarter, so all together stay within the bound.
        self._generation_bytes = max(max_bytes // GENERATIONS, 1)
        # An entry larger than a thirty-second of the bound is computed and not kept: one
        # giant text (a 2 MB log) would push out what a generation of agents reuse, and
        # hold its request's memory long after it (its key is the request's own text).
        # Reading it again costs milliseconds. Small memos keep what fits.
        self._largest = min(self._generation_bytes, max(max_bytes // 32, _ALWAYS_KEPT))
        self._weigh = weigh
        self._fingerprinted = fingerprinted
        self._young: dict[object, tuple[V, int]] = {}
        self._bytes = 0
        # The older generations, the newest first, and the bytes each holds.
        self._older: list[dict[object, tuple[V, int]]] = [
            {} for _ in range(GENERATIONS - 1)]
        self._older_bytes: list[int] = [0] * (GENERATIONS - 1)
        self._usage = CacheUsage()

    @property
    def usage(self) -> CacheUsage:
        """Hits, misses and evictions so far; held: the bytes of every generation's
        entries; entries: how many they hold."""
        u = self._usage
        u.held = self._bytes + sum(self._older_bytes)
        u.entries = len(self._young) + sum([len(g) for g in self._older])
        return u

    def get(self, key: K, compute: Callable[[K], V]) -> V:
        kept: object = hash(key) if self._fingerprinted else key
        found = self._young.get(kept)
        if found is not None:
            self._usage.hits += 1
            return found[0]
        for i, generation in enumerate(self._older):
            found = generation.pop(kept, None)
            if found is not None:
                self._older_bytes[i] -= found[1]  # moved up, not copied: counted once
                break
        if found is None:
            self._usage.misses += 1
            if _long(key):
                breathe()
            value = compute(key)
            weigh = self._weigh
            # The default called directly: a compiled call, where one through the
            # attribute goes through Python's.
            size = weight(kept, value) + _PAIR if weigh is None else weigh(kept, value)
            found = (value, size)
        else:
            self._usage.hits += 1
        self._store(kept, found)
        return found[0]

    def _store(self, kept: object, found: tuple[V, int]) -> None:
        """An entry into the young generation, the oldest dropped when it is full."""
        size = found[1]
        if size <= self._largest:
            if self._bytes + size > self._generation_bytes:
                self._usage.evicted += len(self._older[-1])
                self._older = [self._young, *self._older[:-1]]
                self._older_bytes = [self._bytes, *self._older_bytes[:-1]]
                self._young, self._bytes = {}, 0
            self._young[kept] = found
            self._bytes += size

    def find(self, key: K) -> V | None:
        """The value kept for ``key`` (a hit, moved up as ``get`` moves it), or None:
        nothing is computed or stored (a miss is counted)."""
        kept: object = hash(key) if self._fingerprinted else key
        found = self._young.get(kept)
        if found is None:
            for i, generation in enumerate(self._older):
                found = generation.pop(kept, None)
                if found is not None:
                    self._older_bytes[i] -= found[1]
                    self._store(kept, found)
                    break
        if found is None:
            self._usage.misses += 1
            return None
        self._usage.hits += 1
        return found[0]

    def put(self, key: K, value: V) -> None:
        """Keep ``value`` for ``key``, as ``get`` keeps what it computes (an entry kept
        for ``key`` already stays: a memo's value is the same for the same key)."""
        self.get(key, lambda _: value)

    def discard(self, key: K) -> None:
        """Let ``key``'s entry go, if it is held: a caller that knows no later lookup will
        ask for it (what it was read for is kept elsewhere now) leaves its room to the
        entries other agents reuse. Not counted as an eviction."""
        kept: object = hash(key) if self._fingerprinted else key
        gone = self._young.pop(kept, None)
        if gone is not None:
            self._bytes -= gone[1]
            return
        for i, generation in enumerate(self._older):
            gone = generation.pop(kept, None)
            if gone is not None:
                self._older_bytes[i] -= gone[1]
                return

    def __len__(self) -> int:
        return len(self._young) + sum([len(g) for g in self._older])

    def clear(self) -> None:
        self._young, self._bytes = {}, 0
        self._older = [{} for _ in range(GENERATIONS - 1)]
        self._older_bytes = [0] * (GENERATIONS - 1)


def _long(key: object) -> bool:
    """Whether computing this key's value may take milliseconds: a long text, or a key
    whose texts, within two levels of tuples (where every key of the engine's holds
    them), are that long together."""
    return _chars(key, 2) > _LONG


def _chars(key: object, depth: int) -> int:
    if isinstance(key, str):
        return len(key)
    total = 0
    if depth and isinstance(key, tuple):
        for item in key:
            total += _chars(item, depth - 1)
    return total


class Recent(Generic[K, V]):
    """One entry per agent run in progress, as many as fit in ``max_bytes`` by the sizes
    their callers give (a caller that extends an entry knows its size from the old
    one's, where measuring it whole would cost a warm call its savings); the least
    recently stored goes first. Callers that share it across threads hold a lock."""

    def __init__(self, max_bytes: int) -> None:
        self._max = max_bytes
        self._entries: dict[K, tuple[V, int]] = {}
        self._bytes = 0
        self._usage = CacheUsage()

    @property
    def usage(self) -> CacheUsage:
        u = self._usage
        u.held = self._bytes
        u.entries = len(self._entries)
        return u

    def get(self, key: K) -> V | None:
        """The entry, or None. Not counted as a lookup: a caller may probe several keys
        for one (a run's prefixes)."""
        found = self._entries.get(key)
        return None if found is None else found[0]

    def put(self, key: K, value: V, size: int) -> None:
        """Store ``value`` as the newest entry, then let the oldest go to fit. The newest
        stays even past the bound: its run calls again next, and reading a long run
        anew on every call costs more than the others' entries (a 5 MB history's warm
        call went from 51 to 620 ms without its entry)."""
        self.pop(key)
        self._entries[key] = (value, size)
        self._bytes += size
        while self._bytes > self._max and len(self._entries) > 1:
            self.pop(next(iter(self._entries)))
            self._usage.evicted += 1

    def pop(self, key: K) -> None:
        gone = self._entries.pop(key, None)
        if gone is not None:
            self._bytes -= gone[1]

    def __len__(self) -> int:
        return len(self._entries)
