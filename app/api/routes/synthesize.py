"""``POST /synthesize``."""

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
from app.api.schemas.synthesize import (
    BreakpointOut,
    PrefixOut,
    ResolvedField,
    SignalsOut,
    SynthesizeRequest,
    SynthesizeResponse,
)
from app.engine.jobs.synthesize.plan import Synthesized
from app.engine.reading.outcomes import shorten
from app.service.runner import Ran

router = APIRouter(route_class=JobRoute, generate_unique_id_function=operation_id)


@router.post(
    "/synthesize",
    response_model=SynthesizeResponse,
    responses=PROBLEMS,
    summary="Rebuild compact multi-turn context for the agent's next model call",
)
async def synthesize(
    body: SynthesizeRequest, request: Request, svc: Annotated[Services, Depends(services)],
    tenant: Tenant,
) -> Response:
    job, llm = body.to_job(svc.settings)
    ran = await run_job(request, svc, svc.jobs.synthesize, job, llm, tenant, asked="unknown")
    return render.respond(_answer(ran), ran.value.body)


def _answer(ran: Ran[Synthesized]) -> SynthesizeResponse:
    outcome = ran.value
    s = outcome.synthesis
    sig = s.signals
    p = outcome.prefix
    return SynthesizeResponse(
        format=s.transcript.format,
        compacted=s.compacted,
        mode=outcome.decision.mode.value,
        requested_mode=outcome.requested_mode.value,
        mode_reason=outcome.decision.reason,
        degraded=ran.fallback_reason is not None,
        fallback_reason=ran.fallback_reason,
        llm=render.usage(ran.completion),
        phase=s.phase.value,
        nudge=s.nudge,
        tier=outcome.tier,
        tier_source=outcome.tier_source,
        signals=SignalsOut(
            iteration=sig.iteration, max_iterations=sig.max_iterations,
            task=shorten(s.task, 500) if s.task is not None else None,
            tools_called=sig.tools_called, required_missing=list(sig.required_missing),
            required_failed=list(sig.required_failed), outputs_done=list(sig.outputs_done),
            recent_errors=list(sig.recent_errors)),
        stats=render.stats(s.tokens_before, s.tokens_after, outcome.messages_before,
                           outcome.messages_after),
        receipt=render.receipt(ran.report.spans, ran.report.lost),
        cache=render.cache(ran.cache),
        prefix=PrefixOut(
            stable_messages=p.stable_messages, stable_tokens=p.stable_tokens,
            steady_messages=p.steady_messages, steady_tokens=p.steady_tokens,
            cache_breakpoints=[BreakpointOut(message=m, block=b) for m, b in p.breakpoints]),
        resolved_config={k: ResolvedField(value=v.value, source=v.source)
                         for k, v in outcome.resolved.given().items()},
    )
