"""One runner serves every job: request limits, the worker thread for large inputs, the
rule that says when a job is answered without its LLM, the call itself with its
fallback, metrics, the handles to save and the event, each written once here."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar, cast

from opentelemetry.trace import Tracer

from app.adapters.events import Emitter
from app.adapters.llm.base import Completion, LLMBadResponse
from app.adapters.metrics import Metrics
from app.adapters.tracing import NO_TRACER, span
from app.engine.errors import LLMNotConfigured
from app.engine.jobs.base import ConversationRequest, Done, Job, Plan, Reply, Report, UnusableReply
from app.engine.jobs.synthesize.modes import CONFIGURE_LLM
from app.engine.jobs.synthesize.plan import Synthesized
from app.engine.prompts import PromptMessage
from app.engine.transcript.formats import WireFormat, resolve_format
from app.service.handles import HandleStore
from app.service.limits import check_limits
from app.service.llm_call import CacheInfo, Gateway, LLMOptions
from app.service.prefix_summaries import Found, PrefixSummaries
from app.service.work import LargeRequests, Worker
from app.settings import Settings

Q = TypeVar("Q")
S = TypeVar("S")
V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class Ran(Generic[V]):
    """A job's value and report, and what its LLM call did."""

    value: V
    report: Report
    fallback_reason: str | None = None  # the call failed and the job ran without it
    completion: Completion | None = None
    cache: CacheInfo = field(default_factory=CacheInfo)


@dataclass(frozen=True, slots=True)
class _Called(Generic[V]):
    done: Done[V]
    fallback_reason: str | None = None
    completion: Completion | None = None
    cache: CacheInfo = field(default_factory=CacheInfo)


class Runner:
    def __init__(self, formats: Mapping[str, WireFormat], settings: Settings,
                 metrics: Metrics, gateway: Gateway | None,
                 handles: HandleStore | None = None, events: Emitter | None = None,
                 cache_ttl_s: Mapping[str, float] | None = None,
                 large: LargeRequests | None = None, tracer: Tracer = NO_TRACER,
                 summaries: PrefixSummaries | None = None) -> None:
        self._formats = formats
        self._settings = settings
        self._metrics = metrics
        self._gateway = gateway
        self._handles = handles
        self._events = events
        self._ttl = dict(cache_ttl_s or {})  # per job; others take the gateway's default
        self.large = large or LargeRequests(4, 30.0)
        self._tracer = tracer  # the engine's plan and finish are spans
        self._summaries = summaries  # what earlier calls summarized, for a plan to resume

    async def run(self, job: Job[Q, S, V], request: Q, llm: LLMOptions, tenant: str,
                  ) -> Ran[V]:
        if self._gateway is not None:
            self._gateway.check(llm)
        request, size = self._admit(job, request)
        if size <= self._settings.offload_chars:
            return await self._run(job, request, llm, tenant, Worker(offload=False))
        async with self.large.admitted():
            return await self._run(job, request, llm, tenant, Worker(offload=True))

    async def _run(self, job: Job[Q, S, V], request: Q, llm: LLMOptions, tenant: str,
                   call: Worker) -> Ran[V]:
        plan, done = await call(self._plan, job, request)
        if plan.needs_llm is not None:
            need = plan.needs_llm
            raise LLMNotConfigured(f"{need.what} needs an LLM, and none is configured. "
                                   f"{CONFIGURE_LLM}, or {need.instead}.", pointer=need.pointer)
        for kind, data in plan.notices:
            await self._emit(kind, data, tenant=tenant)
        if done is not None:
            called = _Called(done)
        elif plan.prompt is None or self._gateway is None:
            called = _Called(await call(self._finish, job, plan, None))
        else:
            called = await self._resumed(self._gateway, job, plan, plan.prompt, llm, tenant,
                                         call)
        report = called.done.report
        self._record(job.name, report, tenant)
        if self._handles is not None:
            if report.wire is not None and report.spans:
                await self._handles.save_spans(tenant, report.wire, report.spans)
            for handle, document in report.documents:
                await self._handles.save(tenant, handle, dict(document))
        if report.event is not None:
            await self._emit(*report.event, tenant=tenant)
        return Ran(called.done.value, report, called.fallback_reason, called.completion,
                   called.cache)

    def _plan(self, job: Job[Q, S, V], request: Q) -> tuple[Plan[S], Done[V] | None]:
        """The plan, and the result too when no call or event comes between them: one
        trip to a worker thread instead of two."""
        with span(self._tracer, f"plan {job.name}") as current:
            plan = job.plan(request, self._gateway is not None)
            if current.is_recording():
                current.set_attributes({"contextsynth.job": job.name,
                                        "contextsynth.llm_planned": plan.prompt is not None})
        if plan.needs_llm is None and not plan.notices and (
                plan.prompt is None or self._gateway is None):
            return plan, self._finish(job, plan, None)
        return plan, None

    def _finish(self, job: Job[Q, S, V], plan: Plan[S], reply: Reply | None) -> Done[V]:
        with span(self._tracer, f"finish {job.name}") as current:
            done = job.finish(plan, reply)
            if current.is_recording():
                current.set_attributes(_finished(job.name, done, reply))
            return done

    def _admit(self, job: Job[Q, S, V], request: Q) -> tuple[Q, int]:
        """The request within the limits, and its size in characters."""
        if not isinstance(request, ConversationRequest):
            return request, job.size(request)
        size = check_limits(request.payload, self._formats, self._settings)
        wire = resolve_format(self._formats, request.format, request.payload)
        # The job finds the format by name: the payload is read for its shapes once.
        return cast(Q, replace(request, format=wire.name)), size

    async def _resumed(self, gateway: Gateway, job: Job[Q, S, V], plan: Plan[S],
                       prompt: tuple[PromptMessage, ...], llm: LLMOptions, tenant: str,
                       call: Worker) -> _Called[V]:
        """The call for ``plan``, sending only what an earlier call did not summarize
        already (see ``Resume``), or none when it summarized all of it; a reply used is
        kept for the next call to extend."""
        resume, kept = plan.resume, self._summaries
        if resume is None or kept is None:
            return await self._ask(gateway, job, plan, prompt, llm, tenant, call)
        found = None if llm.force_refresh else await kept.find(resume, tenant, job.name, llm)
        if found is not None and found.turns == len(resume.prefixes):
            reused = await self._reuse(job, plan, found, call)
            if reused is not None:
                return reused
        elif found is not None:
            plan = await call(resume.build, found.turns, found.completion.text)
            prompt = plan.prompt or prompt
        called = await self._ask(gateway, job, plan, prompt, llm, tenant, call)
        if called.fallback_reason is None and called.completion is not None:
            await kept.keep(resume, tenant, job.name, llm, called.completion)
        return called

    async def _reuse(self, job: Job[Q, S, V], plan: Plan[S], found: Found,
                     call: Worker) -> _Called[V] | None:
        """The job finished with a kept summary of all it asks about, as with a cached
        reply; None when the job cannot use it."""
        c = found.completion
        try:
            done = await call(self._finish, job, plan,
                              Reply(c.text, model=c.model, cache_hit=True))
        except UnusableReply:
            return None
        self._metrics.cache_requests.labels("hit").inc()
        return _Called(done, None, c, CacheInfo(True, found.age_s))

    async def _ask(self, gateway: Gateway, job: Job[Q, S, V], plan: Plan[S],
                   prompt: tuple[PromptMessage, ...], llm: LLMOptions, tenant: str,
                   call: Worker) -> _Called[V]:
        """The job finished with the LLM's reply, or without it when the call failed or
        the reply was unusable (fallback), or the error when the request wants errors."""
        messages = list(prompt)
        while True:
            answer = await gateway.ask(messages, llm, tenant=tenant, job=job.name,
                                       max_tokens=plan.max_tokens,
                                       ttl_s=self._ttl.get(job.name))
            completion = answer.completion
            if completion is None:
                failed = Reply(None, answer.fallback_reason)
                return _Called(await call(self._finish, job, plan, failed),
                               answer.fallback_reason, None, answer.cache)
            reply = Reply(completion.text, model=completion.model, cache_hit=answer.cache.hit,
                          cut=completion.cut)
            try:
                done = await call(self._finish, job, plan, reply)
            except UnusableReply as unusable:
                await gateway.settle(answer, used=False)
                if unusable.repair and len(messages) == len(prompt):
                    # One more try, with the reply and what was wrong with it.
                    messages += [PromptMessage("assistant", completion.text),
                                 *unusable.repair]
                    continue
                bad = LLMBadResponse(unusable.detail)
                if llm.on_llm_error == "error":
                    raise bad from unusable
                self._metrics.fallbacks.labels(bad.reason).inc()
                reason = f"{bad.reason}: {bad.detail}"
                return _Called(await call(self._finish, job, plan, Reply(None, reason)),
                               reason, completion, answer.cache)
            await gateway.settle(answer, used=True)  # worth serving again
            return _Called(done, None, completion, answer.cache)

    def _record(self, operation: str, report: Report, tenant: str) -> None:
        m = self._metrics
        if report.tokens_before or report.tokens_after:
            m.tokens.labels(operation, tenant, "in").inc(report.tokens_before)
            m.tokens.labels(operation, tenant, "out").inc(report.tokens_after)
        if report.tokens_before:
            m.compression.labels(operation).observe(report.tokens_after / report.tokens_before)
        if report.phase is not None:
            m.phases.labels(report.phase).inc()

    async def _emit(self, kind: str, data: Mapping[str, Any], *, tenant: str) -> None:
        if self._events is not None:
            await self._events.emit(kind, tenant, dict(data))


def _finished(name: str, done: Done[Any], reply: Reply | None) -> dict[str, str | int | bool]:
    """What a finished job's span says: what ran, the tokens, what the LLM gave."""
    report = done.report
    found: dict[str, str | int | bool] = {
        "contextsynth.job": name, "contextsynth.mode": report.mode,
        "contextsynth.tokens_before": report.tokens_before,
        "contextsynth.tokens_after": report.tokens_after}
    if report.phase is not None:
        found["contextsynth.phase"] = report.phase
    if reply is not None:
        found["contextsynth.llm_reply"] = "failed" if reply.failed else \
            "cached" if reply.cache_hit else "fresh"
    if isinstance(done.value, Synthesized):  # the tokens a synthesis plans for
        found["contextsynth.tier"] = done.value.tier.value
        found["contextsynth.tier_source"] = done.value.tier_source
    return found
