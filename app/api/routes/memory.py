"""``POST /summarize-recall`` and ``POST /reflect``."""

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
from app.api.schemas.memory import (
    CallIn,
    ReflectRequest,
    ReflectResponse,
    SummarizeRecallRequest,
    SummarizeRecallResponse,
)
from app.engine.outcomes import shorten
from app.engine.recall import Memory
from app.engine.reflect import OUTPUT_CHARS, Call, PastIteration
from app.service.llm_call import LLMOptions

router = APIRouter(route_class=FiniteJSONRoute)


def _llm(body: SummarizeRecallRequest | ReflectRequest) -> LLMOptions:
    return LLMOptions(body.synthesis_provider, body.synthesis_model, body.synthesis_temperature,
                      body.on_llm_error, body.force_refresh)


@router.post("/summarize-recall", response_model=SummarizeRecallResponse, responses=PROBLEMS,
             summary="Synthesize recalled memories into one short answer with citations")
async def summarize_recall(body: SummarizeRecallRequest, request: Request,
                           svc: Annotated[Services, Depends(services)],
                           tenant: Tenant) -> JSONResponse:
    memories = [Memory(m.id, m.text, m.score, m.layer) for m in body.memories]
    answer, chosen, ran = await svc.recall.run(
        body.query, memories, k=body.k, max_tokens=body.max_tokens, mode=body.mode,
        llm=_llm(body), tenant=tenant)
    request.state.mode = ran.mode
    citations = [{"memory_id": c.memory.id, "snippet": c.snippet, "score": c.memory.score,
                  "layer": c.memory.layer} for c in answer.citations]
    return JSONResponse({
        "summary": answer.summary, "refused": answer.refused,
        "citations": citations if body.include_citations else [],
        "sources_used": [c.memory.id for c in answer.citations],
        "removed_citations": list(answer.removed_citations),
        "memories_considered": [m.id for m in chosen],
        "mode": ran.mode, "degraded": ran.fallback_reason is not None,
        "fallback_reason": ran.fallback_reason, "cache_hit": ran.cache.hit,
        "cache": render.cache(ran.cache), "llm": render.usage(ran.completion),
    })


def _call(c: CallIn) -> Call:
    params = c.params if isinstance(c.params, str) else json.dumps(c.params, ensure_ascii=False,
                                                                    sort_keys=True)
    return Call(c.tool, params, c.output, c.outcome, c.duration_ms, c.cost)


@router.post("/reflect", response_model=ReflectResponse, responses=PROBLEMS,
             summary="Turn one iteration's tool calls into insights, learnings and a verdict")
async def reflect(body: ReflectRequest, request: Request,
                  svc: Annotated[Services, Depends(services)], tenant: Tenant) -> JSONResponse:
    calls = [_call(c) for c in body.tool_calls]
    history = [PastIteration(p.progress_assessment, tuple(_call(c) for c in p.calls))
               for p in body.history]
    reflection, ran = await svc.reflect.run(body.goal, calls, history, mode=body.mode,
                                            llm=_llm(body), tenant=tenant,
                                            iteration=body.iteration)
    request.state.mode = ran.mode
    enriched: list[dict[str, Any]] = [{
        "tool": e.call.tool, "params": given.params,
        "output": shorten(e.call.output, OUTPUT_CHARS),
        "outcome": "error" if e.failed else "success",
        "duration_ms": e.call.duration_ms, "cost": e.call.cost,
        "insights": list(e.insights), "learning": e.learning, "relevance": e.relevance,
        "next_suggested_actions": list(e.next_actions),
    } for e, given in zip(reflection.calls, body.tool_calls, strict=True)]
    return JSONResponse({
        "record": {"iteration": body.iteration, "goal": body.goal, "calls": enriched,
                   "synthesis": reflection.synthesis,
                   "progress_assessment": reflection.progress},
        "reasoning_context": reflection.reasoning_context, "stuck": reflection.stuck,
        "stuck_reason": reflection.stuck_reason, "recovery_prompt": reflection.recovery_prompt,
        "mode": ran.mode, "degraded": ran.fallback_reason is not None,
        "fallback_reason": ran.fallback_reason, "cache": render.cache(ran.cache),
        "llm": render.usage(ran.completion),
    })
