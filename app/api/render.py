"""Response pieces every job shares (stats, prefix, cache, LLM usage) and the answer itself."""

from __future__ import annotations

from typing import Any

from fastapi import Response
from pydantic import BaseModel

from app.adapters import jsoncodec
from app.adapters.llm.base import Completion
from app.api.schemas.common import PAYLOAD_KEYS
from app.engine.jobs.synthesize.prefix import Prefix
from app.service.llm_call import CacheInfo


def respond(model: type[BaseModel], body: dict[str, Any]) -> Response:
    """``body`` checked against its response model, the one shape the spec and the
    answer share, and sent as JSON.

    The conversation in it is the wire format's own rendering, held to the provider's
    types by the format's tests: the model checks every other field, and the messages
    are not walked again (they are most of the bytes). orjson writes the answer in a
    fraction of the standard encoder's time. What it cannot write (an integer past 64
    bits or a lone surrogate, which only the standard parser reads: see ``jsoncodec``)
    the standard encoder writes, escaped to ASCII, as JSON allows."""
    model.model_validate({k: v for k, v in body.items() if k not in PAYLOAD_KEYS})
    return Response(jsoncodec.dumps(body), media_type="application/json")


def stats(tokens_before: int, tokens_after: int, messages_before: int,
          messages_after: int) -> dict[str, Any]:
    reduction = 1 - tokens_after / tokens_before if tokens_before else 0.0
    return {"tokens_before": tokens_before, "tokens_after": tokens_after,
            "messages_before": messages_before, "messages_after": messages_after,
            "reduction": round(reduction, 4)}


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
