"""Response pieces every job shares: stats, receipts, LLM usage."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.engine.compaction import Span
from app.engine.facts import Facts
from app.llm.base import Completion
from app.service.llm_call import CacheInfo
from app.service.prefix import Prefix

LOST_SHOWN = 50


def stats(tokens_before: int, tokens_after: int, messages_before: int,
          messages_after: int) -> dict[str, Any]:
    reduction = 1 - tokens_after / tokens_before if tokens_before else 0.0
    return {"tokens_before": tokens_before, "tokens_after": tokens_after,
            "messages_before": messages_before, "messages_after": messages_after,
            "reduction": round(reduction, 4)}


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


def prefix(p: Prefix) -> dict[str, Any]:
    return {"stable_messages": p.stable_messages, "stable_tokens": p.stable_tokens,
            "steady_messages": p.steady_messages, "steady_tokens": p.steady_tokens,
            "cache_breakpoints": [{"message": m, "block": b} for m, b in p.breakpoints]}


def cache(info: CacheInfo) -> dict[str, Any]:
    return {"hit": info.hit, "key_age_seconds": info.key_age_seconds}


def usage(completion: Completion | None) -> dict[str, Any] | None:
    if completion is None:
        return None
    return {"provider": completion.provider, "model": completion.model,
            "input_tokens": completion.usage.input_tokens,
            "output_tokens": completion.usage.output_tokens}
