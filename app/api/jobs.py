"""Running a job from a route: the runner's answer, and what the request log says of it."""

from __future__ import annotations

from typing import TypeVar

from fastapi import Request

from app.api.deps import Services
from app.engine.jobs.base import Job
from app.service.llm_call import LLMOptions
from app.service.runner import Ran

Q = TypeVar("Q")
S = TypeVar("S")
V = TypeVar("V")


async def run_job(request: Request, svc: Services, job: Job[Q, S, V], job_request: Q,
                  llm: LLMOptions, tenant: str, *, asked: str) -> Ran[V]:
    """``asked``: the mode the request asked for, logged if the job fails."""
    request.state.mode = asked
    ran = await svc.runner.run(job, job_request, llm, tenant)
    report = ran.report
    request.state.mode = report.mode
    if report.tokens_before:
        request.state.tokens = (report.tokens_before, report.tokens_after)
    return ran
