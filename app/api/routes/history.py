"""``POST /compress-history``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from app.api import render
from app.api.auth import Tenant
from app.api.deps import Services, services
from app.api.finite import FiniteJSONRoute
from app.api.schemas.common import PROBLEMS
from app.api.schemas.history import CompressHistoryRequest, CompressHistoryResponse
from app.engine.history import HistoryOptions
from app.engine.windows import share_of_window
from app.service.history import HistoryJob, HistoryOutcome
from app.service.llm_call import LLMOptions

router = APIRouter(route_class=FiniteJSONRoute)


@router.post(
    "/compress-history",
    response_model=CompressHistoryResponse,
    responses=PROBLEMS,
    summary="Replace older chat history by a sectioned summary, updated incrementally",
)
async def compress_history(
    body: CompressHistoryRequest, request: Request,
    svc: Annotated[Services, Depends(services)], tenant: Tenant,
) -> JSONResponse:
    settings = svc.settings
    job = HistoryJob(
        payload=body.payload(),
        format=body.format,
        options=HistoryOptions(
            trigger_messages=body.trigger_messages or settings.history_trigger_messages,
            trigger_tokens=_token_trigger(body),
            keep_last_n=(body.keep_last_n if body.keep_last_n is not None
                         else settings.history_keep_last_n),
        ),
        mode=body.mode,
        llm=LLMOptions(body.synthesis_provider, body.synthesis_model,
                       body.synthesis_temperature, body.on_llm_error, body.force_refresh),
        tenant=tenant,
    )
    request.state.mode = body.mode
    outcome = await svc.history.run(job)
    request.state.mode = outcome.mode
    request.state.tokens = (outcome.result.tokens_before, outcome.result.tokens_after)
    return JSONResponse(_render(outcome))


def _render(outcome: HistoryOutcome) -> dict[str, Any]:
    r = outcome.result
    body: dict[str, Any] = dict(outcome.body)
    body.update({
        "format": r.transcript.format,
        "compressed": r.compressed,
        "reason": r.reason,
        "incremental": r.incremental,
        "mode": outcome.mode,
        "degraded": outcome.fallback_reason is not None,
        "fallback_reason": outcome.fallback_reason,
        "llm": render.usage(outcome.completion),
        "cache": render.cache(outcome.cache),
        "stats": render.stats(r.tokens_before, r.tokens_after, outcome.messages_before,
                              outcome.messages_after),
        "receipt": render.receipt(r.spans, r.lost),
    })
    return body


def _token_trigger(body: CompressHistoryRequest) -> int | None:
    """The lower of the token trigger and the share of the window, whichever are given."""
    limits = [body.trigger_tokens] if body.trigger_tokens is not None else []
    if body.trigger_share is not None:
        limits.append(share_of_window(body.trigger_share, body.model, body.context_window))
    return min(limits, default=None)
