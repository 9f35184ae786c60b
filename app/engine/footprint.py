"""What a cached object keeps alive, in bytes: the measure every per-process cache is
bounded by.

A cache's memory is what its keys and values hold, not the characters of its keys: a
note's value can be many times its key, a frozenset of tokens several times the text it
came from, and a non-ASCII string takes two or four bytes a character. The size is
``sys.getsizeof`` of each object reached, through containers and the attributes of the
engine's own classes (compiled ones list theirs in ``__mypyc_attrs__``).

An object two entries share is counted in each: the bound is on what the cache could
keep alive, an upper measure. The walk stops at a depth, which no value the engine
caches reaches; an object past it counts as its own shallow size.
"""

from __future__ import annotations

import sys
from typing import Any

_DEPTH = 12
_EMPTY: tuple[str, ...] = ()


def footprint(obj: object) -> int:
    """Bytes of ``obj`` and of everything it holds."""
    return _size(obj, _DEPTH)


def _size(obj: object, depth: int) -> int:
    size: int = sys.getsizeof(obj)
    if isinstance(obj, (str, bytes, int, float, bool)) or obj is None or depth == 0:
        return size
    depth -= 1
    if isinstance(obj, (tuple, list, frozenset, set)):
        for item in obj:
            size += _size(item, depth)
        return size
    if isinstance(obj, dict):
        for key, value in obj.items():
            size += _size(key, depth) + _size(value, depth)
        return size
    if isinstance(obj, memoryview):
        return size + obj.nbytes  # the view's own size leaves out the buffer it holds
    for name in _attributes(obj):
        size += _size(getattr(obj, name, None), depth)
    return size


def _attributes(obj: object) -> tuple[str, ...]:
    kind = type(obj)
    names: Any = getattr(kind, "__mypyc_attrs__", None) or getattr(kind, "__slots__", None)
    if names:
        return tuple(names)
    held = getattr(obj, "__dict__", None)
    return tuple(held) if isinstance(held, dict) else _EMPTY
