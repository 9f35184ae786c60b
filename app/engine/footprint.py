"""What a cached object keeps alive, in bytes: the measure every per-process cache is
bounded by.

A cache's memory is what its keys and values hold, not the characters of its keys: a
note's value can be many times its key, a frozenset of tokens several times the text it
came from, and a non-ASCII string takes two or four bytes a character. The size is
``sys.getsizeof`` of each object reached, through containers and the attributes of the
engine's own classes (compiled ones list theirs in ``__mypyc_attrs__``). Texts, byte
strings, tuples and numbers, most of what is reached, are sized by CPython's layout
instead of asking it: ``getsizeof`` costs a method lookup each time, and measuring a
cold call's every memo entry that way made the call 10% slower.

An object two entries share is counted in each: the bound is on what the cache could
keep alive, an upper measure. The walk stops at a depth, which no value the engine
caches reaches; an object past it counts as its own shallow size.
"""

from __future__ import annotations

import sys
from typing import Any, Final

# Final: compiled code inlines them instead of looking them up on each object.
_DEPTH: Final = 12
_EMPTY: Final[tuple[str, ...]] = ()
# CPython 3 on 64 bits: the headers of a compact ASCII str (a byte a character follows)
# and of bytes, a tuple's header and its pointer per item, an int below 2**30 and a
# float. The tests hold these equal to ``sys.getsizeof``.
STR_HEADER: Final = 49
BYTES_HEADER: Final = 33
TUPLE_HEADER: Final = 40
POINTER: Final = 8
SMALL_INT: Final = 28
FLOAT: Final = 24
_SMALL: Final = 1 << 30
# An int's size by its count of 30-bit digits, from two on, as ``getsizeof`` gives it
# (a digit past 2**30, a third past 2**60, ...): the keys of every fingerprinted memo
# are 64-bit hashes, and asking ``getsizeof`` for each was a fifth of weighing a cold
# call's entries.
_DIGIT_BITS: Final = 30
_INT_SIZES: Final = tuple([int(sys.getsizeof(1 << (_DIGIT_BITS * d))) for d in range(1, 8)])


def footprint(obj: object) -> int:
    """Bytes of ``obj`` and of everything it holds."""
    return _size(obj, _DEPTH)


def _size(obj: object, depth: int) -> int:
    if isinstance(obj, str):
        return STR_HEADER + len(obj) if obj.isascii() else int(sys.getsizeof(obj))
    if isinstance(obj, bytes):
        return BYTES_HEADER + len(obj)
    if obj is None or isinstance(obj, bool):
        return 0  # one object the whole process shares
    if isinstance(obj, int):
        return SMALL_INT if -_SMALL < obj < _SMALL else _int_size(obj)
    if isinstance(obj, float):
        return FLOAT
    if depth == 0:
        return int(sys.getsizeof(obj))
    depth -= 1
    if isinstance(obj, tuple):
        size = TUPLE_HEADER + POINTER * len(obj)
        for item in obj:
            size += _size(item, depth)
        return size
    size = int(sys.getsizeof(obj))
    if isinstance(obj, (list, frozenset, set)):
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


def _int_size(value: int) -> int:
    """``getsizeof`` of an int past ``_SMALL``."""
    digits = ((value if value >= 0 else -value).bit_length() + _DIGIT_BITS - 1) // _DIGIT_BITS
    if digits - 2 < len(_INT_SIZES):
        return _INT_SIZES[digits - 2]
    return int(sys.getsizeof(value))


def _attributes(obj: object) -> tuple[str, ...]:
    kind = type(obj)
    names: Any = getattr(kind, "__mypyc_attrs__", None) or getattr(kind, "__slots__", None)
    if names:
        return tuple(names)
    held = getattr(obj, "__dict__", None)
    return tuple(held) if isinstance(held, dict) else _EMPTY
