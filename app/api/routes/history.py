"""``POST /compress-history``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response

from app.api import render
from app.api.auth import Tenant
from app.api.deps import Services, services
from app.api.job_route import JobRoute
from app.api.jobs import run_job
from app.api.routes import operation_id
from app.api.schemas.common import PROBLEMS
from app.api.schemas.history import CompressHistoryRequest, CompressHistoryResponse
from app.engine.jobs.history.plan import Compressed
from app.service.runner import Ran

router = APIRouter(route_class=JobRoute, generate_unique_id_function=operation_id)


@router.post(
    "/compress-history",
    response_model=CompressHistoryResponse,
    responses=PROBLEMS,
    summary="Replace older chat history by a sectioned summary, updated incrementally",
)
async def compress_history(
    body: CompressHistoryRequest, request: Request,
    svc: Annotated[Services, Depends(services)], tenant: Tenant,
) -> Response:
    ran = await run_job(request, svc, svc.jobs.history, body.to_job(svc.settings),
                        body.llm_options(), tenant, asked=body.mode)
    return render.respond(_answer(ran), ran.value.body)


def _answer(ran: Ran[Compressed]) -> CompressHistoryResponse:
    r = ran.value.result
    return CompressHistoryResponse(
        format=r.transcript.format,
        compressed=r.compressed,
        reason=r.reason,
        incremental=r.incremental,
        mode=ran.report.mode,
        degraded=ran.fallback_reason is not None,
        fallback_reason=ran.fallback_reason,
        llm=render.usage(ran.completion),
        cache=render.cache(ran.cache),
        stats=render.stats(r.tokens_before, r.tokens_after, ran.value.messages_before,
                           ran.value.messages_after),
        receipt=render.receipt(ran.report.spans, ran.report.lost),
    )
