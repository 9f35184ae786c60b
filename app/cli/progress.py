"""Progress of the long commands (bench, its replay and load, eval) on stderr.

Their tables go to stdout, so a script reading a table is not disturbed; a person
watching sees each transcript as it is taken up instead of a silent minute.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator, Sized
from typing import TypeVar

T = TypeVar("T")
Say = Callable[[str], None]


def to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def counted(items: Iterable[T], name: Callable[[T], str], say: Say = to_stderr,
            total: int | None = None) -> Iterator[T]:
    """``items`` as they are, with a ``[n/total] name`` line before each is worked on."""
    if total is None and isinstance(items, Sized):
        total = len(items)
    of = f"/{total}" if total is not None else ""
    for n, item in enumerate(items, 1):
        say(f"[{n}{of}] {name(item)}")
        yield item
