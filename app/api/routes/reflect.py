"""``POST /reflect``."""

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
from app.api.schemas.reflect import (
    EnrichedCallOut,
    RecordOut,
    ReflectRequest,
    ReflectResponse,
)
from app.engine.jobs.reflect.reflector import OUTPUT_CHARS
from app.engine.reading.outcomes import shorten

router = APIRouter(route_class=JobRoute, generate_unique_id_function=operation_id)


@router.post("/reflect", response_model=ReflectResponse, responses=PROBLEMS,
             summary="Turn one iteration's tool calls into insights, learnings and a verdict")
async def reflect(body: ReflectRequest, request: Request,
                  svc: Annotated[Services, Depends(services)], tenant: Tenant) -> Response:
    ran = await run_job(request, svc, svc.jobs.reflect, body.to_job(), body.llm_options(),
                        tenant, asked=body.mode)
    reflection = ran.value
    enriched = [EnrichedCallOut(
        tool=e.call.tool, params=given.params,
        output=shorten(e.call.output, OUTPUT_CHARS),
        outcome=given.outcome or ("error" if e.failed else "success"),
        duration_ms=e.call.duration_ms, cost=e.call.cost,
        timestamp=given.timestamp, rationale=given.rationale,
        insights=list(e.insights), learning=e.learning, relevance=e.relevance,
        next_suggested_actions=list(e.next_actions),
    ) for e, given in zip(reflection.calls, body.tool_calls, strict=True)]
    return render.respond(ReflectResponse(
        record=RecordOut(iteration=body.iteration, goal=body.goal, timestamp=body.timestamp,
                         mode=ran.report.mode, user_feedback=body.user_feedback,
                         calls=enriched, synthesis=reflection.synthesis,
                         progress_assessment=reflection.progress),
        reasoning_context=reflection.reasoning_context, stuck=reflection.stuck,
        stuck_reason=reflection.stuck_reason, recovery_prompt=reflection.recovery_prompt,
        mode=ran.report.mode, degraded=ran.fallback_reason is not None,
        fallback_reason=ran.fallback_reason, cache=render.cache(ran.cache),
        llm=render.usage(ran.completion),
    ))
