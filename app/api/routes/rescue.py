"""``POST /rescue``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from app.api import render
from app.api.auth import Tenant
from app.api.deps import Services, services
from app.api.finite import FiniteJSONRoute
from app.api.schemas.common import PROBLEMS
from app.api.schemas.rescue import RescueRequest, RescueResponse
from app.service.llm_call import LLMOptions
from app.service.rescue import RescueJob

router = APIRouter(route_class=FiniteJSONRoute)


@router.post(
    "/rescue",
    response_model=RescueResponse,
    responses=PROBLEMS,
    summary="Answer the user from an out-of-steps agent's evidence, in one tools-free call",
)
async def rescue(
    body: RescueRequest, request: Request, svc: Annotated[Services, Depends(services)],
    tenant: Tenant,
) -> JSONResponse:
    job = RescueJob(
        payload=body.payload(), format=body.format, question=body.question,
        max_steps=body.max_steps, dry_run=body.dry_run,
        llm=LLMOptions(body.synthesis_provider, body.synthesis_model,
                       body.synthesis_temperature, on_llm_error="error",
                       force_refresh=body.force_refresh),
        tenant=tenant,
    )
    request.state.mode = "dry_run" if body.dry_run else "llm"
    outcome = await svc.rescue.run(job)
    p = outcome.plan
    return JSONResponse({
        "answer": outcome.completion.text if outcome.completion else None,
        "dry_run": body.dry_run,
        "prompt": [{"role": m.role, "content": m.content} for m in p.prompt]
        if body.dry_run else None,
        "evidence": {"steps": p.steps, "chars": p.evidence_chars, "compacted": p.compacted},
        "llm": render.usage(outcome.completion),
        "cache": render.cache(outcome.cache),
    })
