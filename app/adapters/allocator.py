"""The serving process's C allocator, set to give large blocks back when they are freed.

glibc serves a block of 128 KB or more with its own mapping, returned to the system
when freed, but after the first such free it raises that threshold (up to 32 MB) so
that later blocks come from the heap, which it rarely shrinks. A worker that once
read a 14 MB body kept 82 MB more resident for good (`bench --largest`'s request to
/synthesize); with the threshold held at 128 KB it kept 37 MB, and what the engine
does between requests allocates small objects, which this does not touch (the corpus
replay timed the same either way). Linux with glibc only; elsewhere this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from typing import Protocol

# mallopt's parameter for the size from which a block gets a mapping of its own;
# setting it also stops glibc from moving it.
_M_MMAP_THRESHOLD = -3


class CLibrary(Protocol):
    """The part of the C library this uses (a fake in tests)."""

    def mallopt(self, param: int, value: int, /) -> int: ...


def _libc() -> CLibrary | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        library = ctypes.CDLL(name)
    except OSError:
        return None
    return library if hasattr(library, "mallopt") else None


def return_large_blocks(threshold: int, libc: CLibrary | None = None) -> bool:
    """Blocks of ``threshold`` bytes or more go back to the system when freed; 0 leaves
    the allocator as it is. Whether the allocator took the setting."""
    if threshold <= 0:
        return False
    libc = libc if libc is not None else _libc()
    return libc is not None and libc.mallopt(_M_MMAP_THRESHOLD, threshold) == 1
