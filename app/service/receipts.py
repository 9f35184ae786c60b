"""A receipt of what compaction dropped, as every job and the proxy report it."""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from typing import Any

from app.engine.compaction.base import Span
from app.engine.reading.facts import Facts

LOST_SHOWN = 50


def _first(found: Iterable[str]) -> list[str]:
    """The first of them in order, as sorted(...)[:LOST_SHOWN] gives them, without sorting
    them all: a long run loses hundreds of thousands (sorting them was 35 ms of a 50 ms
    warm call on a 5 MB history)."""
    return heapq.nsmallest(LOST_SHOWN, found)


def receipt(spans: Sequence[Span], lost: Facts) -> dict[str, Any]:
    return {
        "dropped": [{"handle": s.handle, "kind": s.kind, "first": s.first, "last": s.last,
                     "messages": s.messages, "tools": list(s.tools)} for s in spans],
        "lost_facts": {
            "total": len(lost),
            "paths": _first(lost.paths),
            "identifiers": _first(lost.identifiers),
            "numbers": _first(lost.numbers),
            "errors": _first(lost.errors),
            "complete": lost.complete,
        },
    }
