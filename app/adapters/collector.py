"""The serving process's garbage collector, set for a heap of long-lived caches.

CPython's cycle collector runs a young collection every 700 new container objects
and, every hundred of those, may walk the whole heap. One request allocates
thousands of containers (the parsed body alone has a dict per message), and the
engine's caches hold millions of long-lived objects, so the full walks came every
few hundred requests and took 50-60 ms each: 0.19 ms per request averaged over the
corpus replay (``gc.callbacks``), a tenth of a call. What the engine keeps holds no
reference cycles; reference counting frees it, and the collector only has cycles to
find in the framework's short-lived objects. So the objects made while starting
(modules, schemas, the tokenizer's tables) are frozen out of every collection, and
young collections run ``young`` allocations apart: the same replay then spent
0.015 ms per request collecting.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol


class Collector(Protocol):
    """The part of the ``gc`` module this uses (a fake in tests)."""

    def get_threshold(self) -> tuple[int, int, int]: ...

    def set_threshold(self, threshold0: int, threshold1: int = ..., threshold2: int = ...,
                      /) -> None: ...

    def collect(self, generation: int = 2) -> int: ...

    def freeze(self) -> None: ...

    def unfreeze(self) -> None: ...


def tune(young: int, collector: Collector = gc) -> None:
    """Freeze what exists now and space young collections ``young`` allocations apart;
    0 leaves the collector as Python set it. Call once, after start-up, per process."""
    if young <= 0:
        return
    _, middle, old = collector.get_threshold()
    collector.collect()  # start-up garbage goes now, not into the frozen generation
    collector.freeze()
    collector.set_threshold(young, middle, old)


@contextmanager
def tuned(young: int, collector: Collector = gc) -> Iterator[None]:
    """``tune`` for the length of a block, then the collector as it was: a bench times
    the engine in its own process under the settings ``serve`` runs it with."""
    if young <= 0:
        yield
        return
    before = collector.get_threshold()
    tune(young, collector)
    try:
        yield
    finally:
        collector.unfreeze()
        collector.set_threshold(*before)
