"""``POST /summarize-trace``."""

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
from app.api.schemas.trace import (
    GroupOut,
    SummarizeTraceRequest,
    SummarizeTraceResponse,
    TraceStatsOut,
)
from app.engine.jobs.trace.plan import Summarized, action_dict
from app.service.runner import Ran

router = APIRouter(route_class=JobRoute, generate_unique_id_function=operation_id)


@router.post(
    "/summarize-trace",
    response_model=SummarizeTraceResponse,
    responses=PROBLEMS,
    summary="Shrink a ReAct action trace: older actions grouped by tool, recent ones in full",
)
async def summarize_trace(
    body: SummarizeTraceRequest, request: Request,
    svc: Annotated[Services, Depends(services)], tenant: Tenant,
) -> Response:
    ran = await run_job(request, svc, svc.jobs.trace, body.to_job(svc.settings),
                        body.llm_options(), tenant, asked=body.mode)
    return render.respond(_answer(ran))


def _answer(ran: Ran[Summarized]) -> SummarizeTraceResponse:
    r = ran.value.result
    total = ran.value.actions_total
    reduction = 1 - r.tokens_after / r.tokens_before if r.tokens_before else 0.0
    return SummarizeTraceResponse(
        scratchpad=r.text,
        strategy=r.strategy,
        reason=r.reason,
        mode=ran.report.mode,
        degraded=ran.fallback_reason is not None,
        fallback_reason=ran.fallback_reason,
        llm=render.usage(ran.completion),
        cache=render.cache(ran.cache),
        groups=[GroupOut(tool=g.tool, calls=g.calls, summary=g.summary, paths=list(g.paths),
                         errors=list(g.errors)) for g in r.groups],
        recent=[action_dict(a) for a in r.recent],
        receipt=render.receipt(ran.report.spans, ran.report.lost),
        stats=TraceStatsOut(chars_before=r.chars_before, chars_after=r.chars_after,
                            tokens_before=r.tokens_before, tokens_after=r.tokens_after,
                            reduction=round(reduction, 4), actions_total=total,
                            actions_summarized=total - len(r.recent)),
    )
