"""Response pieces every job shares (stats, cache, LLM usage, the receipt) as their
response models, and the answer itself, written from its model."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import Response
from pydantic import BaseModel

from app.adapters import jsoncodec
from app.adapters.llm.base import Completion
from app.api.schemas.common import (
    PAYLOAD_KEYS,
    CacheOut,
    LLMUsageOut,
    ReceiptOut,
    StatsOut,
)
from app.engine.compaction.base import Span
from app.engine.reading.facts import Facts
from app.service.llm_call import CacheInfo
from app.service.receipts import receipt as receipt_document

_CONVERSATION_FIELDS: set[str] = set(PAYLOAD_KEYS)


def respond(answer: BaseModel, conversation: Mapping[str, Any] | None = None) -> Response:
    """The answer as JSON: the conversation under the keys of its wire format, then the
    fields of the response model, the one shape the spec and the answer share (built
    from it, so each field is named once, where mypy checks it).

    The conversation is the wire format's own rendering, held to the provider's types by
    the format's tests: the model leaves it out and it is not walked again (it is most
    of the bytes). orjson writes the answer in a fraction of the standard encoder's
    time. What it cannot write (an integer past 64 bits or a lone surrogate, which only
    the standard parser reads: see ``jsoncodec``) the standard encoder writes, escaped
    to ASCII, as JSON allows."""
    body: dict[str, Any] = dict(conversation) if conversation else {}
    body.update(answer.model_dump(mode="json", exclude=_CONVERSATION_FIELDS))
    return Response(jsoncodec.dumps(body), media_type="application/json")


def stats(tokens_before: int, tokens_after: int, messages_before: int,
          messages_after: int) -> StatsOut:
    reduction = 1 - tokens_after / tokens_before if tokens_before else 0.0
    return StatsOut(tokens_before=tokens_before, tokens_after=tokens_after,
                    messages_before=messages_before, messages_after=messages_after,
                    reduction=round(reduction, 4))


def cache(info: CacheInfo) -> CacheOut:
    return CacheOut(hit=info.hit, key_age_seconds=info.key_age_seconds)


def usage(completion: Completion | None) -> LLMUsageOut | None:
    if completion is None:
        return None
    return LLMUsageOut(provider=completion.provider, model=completion.model,
                       input_tokens=completion.usage.input_tokens,
                       output_tokens=completion.usage.output_tokens)


def receipt(spans: Sequence[Span], lost: Facts) -> ReceiptOut:
    """The receipt as every job and the proxy write it (``service.receipts``)."""
    return ReceiptOut.model_validate(receipt_document(spans, lost))
