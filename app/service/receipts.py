"""A receipt of what compaction dropped, as every job and the proxy report it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.engine.compaction.base import Span
from app.engine.reading.facts import Facts

LOST_SHOWN = 50


def receipt(spans: Sequence[Span], lost: Facts) -> dict[str, Any]:
    return {
        "dropped": [{"handle": s.handle, "kind": s.kind, "first": s.first, "last": s.last,
                     "messages": s.messages, "tools": list(s.tools)} for s in spans],
        "lost_facts": {
            "total": len(lost),
            "paths": sorted(lost.paths)[:LOST_SHOWN],
            "identifiers": sorted(lost.identifiers)[:LOST_SHOWN],
            "numbers": sorted(lost.numbers)[:LOST_SHOWN],
            "errors": sorted(lost.errors)[:LOST_SHOWN],
        },
    }
