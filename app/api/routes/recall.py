"""``POST /summarize-recall``."""

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
from app.api.schemas.recall import (
    CitationOut,
    SummarizeRecallRequest,
    SummarizeRecallResponse,
)

router = APIRouter(route_class=JobRoute, generate_unique_id_function=operation_id)


@router.post("/summarize-recall", response_model=SummarizeRecallResponse, responses=PROBLEMS,
             summary="Synthesize recalled memories into one short answer with citations")
async def summarize_recall(body: SummarizeRecallRequest, request: Request,
                           svc: Annotated[Services, Depends(services)],
                           tenant: Tenant) -> Response:
    ran = await run_job(request, svc, svc.jobs.recall, body.to_job(), body.llm_options(),
                        tenant, asked=body.mode)
    answer = ran.value.answer
    citations = [CitationOut(memory_id=c.memory.id, snippet=c.snippet, score=c.memory.score,
                             layer=c.memory.layer) for c in answer.citations]
    return render.respond(SummarizeRecallResponse(
        summary=answer.summary, refused=answer.refused,
        citations=citations if body.include_citations else [],
        sources_used=[c.memory.id for c in answer.citations],
        removed_citations=list(answer.removed_citations),
        removed_claims=list(answer.removed_claims),
        flagged_claims=list(answer.flagged_claims),
        memories_considered=[m.id for m in ran.value.chosen],
        mode=ran.report.mode, degraded=ran.fallback_reason is not None,
        fallback_reason=ran.fallback_reason, cache_hit=ran.cache.hit,
        cache=render.cache(ran.cache), llm=render.usage(ran.completion),
    ))
