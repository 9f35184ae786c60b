"""``POST /rescue``."""

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
from app.api.schemas.rescue import (
    EvidenceOut,
    PromptMessageOut,
    RescueRequest,
    RescueResponse,
)

router = APIRouter(route_class=JobRoute, generate_unique_id_function=operation_id)


@router.post(
    "/rescue",
    response_model=RescueResponse,
    responses=PROBLEMS,
    summary="Answer the user from an out-of-steps agent's evidence, in one tools-free call",
)
async def rescue(
    body: RescueRequest, request: Request, svc: Annotated[Services, Depends(services)],
    tenant: Tenant,
) -> Response:
    ran = await run_job(request, svc, svc.jobs.rescue, body.to_job(svc.settings),
                        body.llm_options(), tenant, asked="dry_run" if body.dry_run else "llm")
    p = ran.value.plan
    return render.respond(RescueResponse(
        answer=ran.value.answer,
        dry_run=body.dry_run,
        prompt=[PromptMessageOut(role=m.role, content=m.content) for m in p.prompt]
        if body.dry_run else None,
        evidence=EvidenceOut(steps=p.steps, chars=p.evidence_chars, compacted=p.compacted,
                             tokens=p.tokens),
        degraded=ran.value.degraded_reason is not None,
        degraded_reason=ran.value.degraded_reason,
        llm=render.usage(ran.completion),
        cache=render.cache(ran.cache),
    ))
