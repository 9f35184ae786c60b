"""``POST /synthesize``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from app.api import render
from app.api.auth import Tenant
from app.api.deps import Services, services
from app.api.finite import FiniteJSONRoute
from app.api.schemas.common import PROBLEMS
from app.api.schemas.synthesize import SynthesizeRequest, SynthesizeResponse
from app.engine.outcomes import shorten
from app.engine.phases import PhaseOptions
from app.service.synthesize import SynthesizeJob, SynthesizeOutcome

router = APIRouter(route_class=FiniteJSONRoute)


@router.post(
    "/synthesize",
    response_model=SynthesizeResponse,
    responses=PROBLEMS,
    summary="Rebuild compact multi-turn context for the agent's next model call",
)
async def synthesize(
    body: SynthesizeRequest, request: Request, svc: Annotated[Services, Depends(services)],
    tenant: Tenant,
) -> JSONResponse:
    reasoning = body.reasoning
    job = SynthesizeJob(
        payload=body.payload(),
        format=body.format,
        model=body.model,
        tier=body.tier,
        strategy=body.strategy,
        reasoning_top=reasoning.model_dump(exclude={"strategies"}, exclude_none=True),
        reasoning_strategies={k: v.model_dump(exclude_none=True)
                              for k, v in reasoning.strategies.items()},
        phase=PhaseOptions(
            required_tools=tuple(body.required_tools),
            output_tools=tuple(body.output_tools) if body.output_tools is not None else None,
            iteration=body.iteration,
            max_iterations=body.max_iterations,
        ),
        steer=body.steer,
        task=body.task,
        on_llm_error=body.on_llm_error,
        tenant=tenant,
        force_refresh=body.force_refresh,
        cache_breakpoints=body.cache_breakpoints,
    )
    request.state.mode = "unknown"
    outcome = await svc.synthesize.run(job)
    request.state.mode = outcome.decision.mode.value
    request.state.tokens = (outcome.synthesis.tokens_before, outcome.synthesis.tokens_after)
    return JSONResponse(_render(outcome, outcome.synthesis.task))


def _render(outcome: SynthesizeOutcome, task: str | None) -> dict[str, Any]:
    s = outcome.synthesis
    sig = s.signals
    body: dict[str, Any] = dict(outcome.body)
    body.update({
        "format": s.transcript.format,
        "compacted": s.compacted,
        "mode": outcome.decision.mode.value,
        "requested_mode": outcome.requested_mode.value,
        "mode_reason": outcome.decision.reason,
        "degraded": outcome.fallback_reason is not None,
        "fallback_reason": outcome.fallback_reason,
        "llm": render.usage(outcome.completion),
        "phase": s.phase.value,
        "nudge": s.nudge,
        "tier": outcome.tier.value,
        "tier_source": outcome.tier_source,
        "signals": {
            "iteration": sig.iteration,
            "max_iterations": sig.max_iterations,
            "task": shorten(task, 500) if task is not None else None,
            "tools_called": sig.tools_called,
            "required_missing": list(sig.required_missing),
            "outputs_done": list(sig.outputs_done),
            "recent_errors": list(sig.recent_errors),
        },
        "stats": render.stats(s.tokens_before, s.tokens_after, outcome.messages_before,
                              outcome.messages_after),
        "receipt": render.receipt(s.receipt.spans, s.receipt.lost),
        "cache": render.cache(outcome.cache),
        "prefix": render.prefix(outcome.prefix),
        "resolved_config": {k: {"value": v.value, "source": v.source}
                            for k, v in outcome.resolved.items()},
    })
    return body
