"""``POST /summarize-trace``."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from app.api import render
from app.api.auth import Tenant
from app.api.deps import Services, services
from app.api.finite import FiniteJSONRoute
from app.api.schemas.common import PROBLEMS
from app.api.schemas.trace import THRESHOLDS, SummarizeTraceRequest, SummarizeTraceResponse
from app.engine.compaction import Span
from app.engine.trace import Action, TraceOptions, TraceResult
from app.service.llm_call import LLMOptions
from app.service.trace import TraceJob, TraceOutcome, action_dict
from app.settings import Settings

router = APIRouter(route_class=FiniteJSONRoute)


@router.post(
    "/summarize-trace",
    response_model=SummarizeTraceResponse,
    responses=PROBLEMS,
    summary="Shrink a ReAct action trace: older actions grouped by tool, recent ones in full",
)
async def summarize_trace(
    body: SummarizeTraceRequest, request: Request,
    svc: Annotated[Services, Depends(services)], tenant: Tenant,
) -> JSONResponse:
    actions = None
    if body.actions is not None:
        actions = tuple(Action(a.action, _text(a.action_input), a.observation, a.outcome,
                               a.thought) for a in body.actions)
    job = TraceJob(
        actions=actions, scratchpad=body.scratchpad, options=_options(body, svc.settings),
        mode=body.mode,
        llm=LLMOptions(body.synthesis_provider, body.synthesis_model,
                       body.synthesis_temperature, body.on_llm_error, body.force_refresh),
        tenant=tenant,
    )
    request.state.mode = body.mode
    outcome = await svc.trace.run(job)
    request.state.mode = outcome.mode
    request.state.tokens = (outcome.result.tokens_before, outcome.result.tokens_after)
    return JSONResponse(_render(outcome))


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _options(body: SummarizeTraceRequest, settings: Settings) -> TraceOptions:
    """Each threshold from the request, else from settings."""
    values = {name: getattr(body, name) if getattr(body, name) is not None
              else getattr(settings, f"trace_{name}") for name in THRESHOLDS}
    return TraceOptions(**values)


def _receipt(r: TraceResult) -> dict[str, Any]:
    spans = []
    if r.handle is not None:
        tools = tuple(dict.fromkeys(a.action for a in r.summarized))
        kind = "truncated" if r.strategy == "truncation" else "summarized"
        spans.append(Span(r.handle, kind, 0, len(r.summarized) - 1, len(r.summarized), tools))
    return render.receipt(spans, r.lost)


def _render(outcome: TraceOutcome) -> dict[str, Any]:
    r = outcome.result
    reduction = 1 - r.tokens_after / r.tokens_before if r.tokens_before else 0.0
    return {
        "scratchpad": r.text,
        "strategy": r.strategy,
        "reason": r.reason,
        "mode": outcome.mode,
        "degraded": outcome.fallback_reason is not None,
        "fallback_reason": outcome.fallback_reason,
        "llm": render.usage(outcome.completion),
        "cache": render.cache(outcome.cache),
        "groups": [{"tool": g.tool, "calls": g.calls, "summary": g.summary,
                    "paths": list(g.paths), "errors": list(g.errors)} for g in r.groups],
        "recent": [action_dict(a) for a in r.recent],
        "receipt": _receipt(r),
        "stats": {"chars_before": r.chars_before, "chars_after": r.chars_after,
                  "tokens_before": r.tokens_before, "tokens_after": r.tokens_after,
                  "reduction": round(reduction, 4), "actions_total": outcome.actions_total,
                  "actions_summarized": outcome.actions_total - len(r.recent)},
    }
