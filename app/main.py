"""``create_app(settings)``: the one place where the service is put together."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from functools import partial
from importlib.metadata import EntryPoint
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from opentelemetry.trace import Tracer, TracerProvider
from prometheus_client import CollectorRegistry
from starlette.routing import Route

from app import VERSION
from app.adapters import allocator, collector, plugins
from app.adapters.cache import Cache, FailOpenCache, MemoryCache
from app.adapters.llm.client import LLMClient
from app.adapters.llm.registry import build_providers
from app.adapters.llm.resilience import RetryPolicy
from app.adapters.memory import container_memory_limit
from app.adapters.metrics import Metrics
from app.adapters.ratelimit import FailOpenLimiter, Limiter, MemoryLimiter
from app.adapters.redis_cache import RedisCache
from app.adapters.redis_ratelimit import RedisLimiter
from app.adapters.resends import Resends
from app.adapters.tokenizer import load_encoding, pretokenizer
from app.adapters.tracing import NO_TRACER, Tracing, traced_transport, tracing_from_environ
from app.adapters.upstream import Slots, Transport, Upstream
from app.adapters.warmpath import WarmPath
from app.adapters.webhooks import build_webhooks
from app.api import errors
from app.api.deps import Services
from app.api.http_protocol import bound_headers
from app.api.mcp import PATH as MCP_PATH
from app.api.mcp import MCPEndpoint
from app.api.middleware import BodyLimit, RequestRecords
from app.api.request_id import RequestIds
from app.api.routes import (
    echo,
    expand,
    history,
    mount,
    operation_id,
    ops,
    proxy,
    recall,
    reflect,
    rescue,
    synthesize,
    trace,
)
from app.api.spans import SpanAttributes, telemetry
from app.engine import memo
from app.engine.compaction.base import Strategy
from app.engine.compaction.fast import FastStrategy
from app.engine.compaction.strategies import builtin_strategies
from app.engine.jobs.caches import EngineCaches
from app.engine.memo import CacheUsage
from app.engine.transcript.formats import build_formats
from app.engine.transcript.tokens import Encoder, TokenCounter
from app.service.cache_plan import CachePlan, cache_plan
from app.service.handles import HandleStore
from app.service.jobs import Jobs
from app.service.llm_call import LLMGateway
from app.service.prefix_summaries import PrefixSummaries
from app.service.proxy import ProxyService
from app.service.rate_limits import RateLimits
from app.service.runner import Runner
from app.service.shutdown import close_all
from app.service.work import LargeRequests, body_budget, large_requests
from app.settings import Settings

# Each client's close, at shutdown: a dead peer must not hold the pod past its grace.
_CLOSE_GRACE_S = 5.0


def _engine_build() -> str:
    """Whether the engine runs compiled (its modules are mypyc extensions) or as Python."""
    return "compiled" if (memo.__file__ or "").endswith(".so") else "pure"


def create_app(
    settings: Settings | None = None,
    *,
    registry: CollectorRegistry | None = None,
    encoder: Encoder | None = None,
    discover: Callable[[], Iterable[EntryPoint]] | None = None,
    environ: Mapping[str, str] | None = None,
    cache: Cache | None = None,
    upstream: Transport | None = None,
    limiter: Limiter | None = None,
    tracer_provider: TracerProvider | None = None,
) -> FastAPI:
    """``tracer_provider``: where spans go (tests hand in their own); else tracing is as
    the OTEL_* variables say, off unless they name an exporter or an endpoint."""
    settings = settings or Settings()
    tracing = Tracing(tracer_provider) if tracer_provider is not None else \
        tracing_from_environ(os.environ if environ is None else environ)
    tracer = tracing.tracer
    metrics = Metrics(registry if registry is not None else CollectorRegistry(),
                      multiprocess_dir=(os.environ if environ is None else environ).get(
                          "PROMETHEUS_MULTIPROC_DIR"),
                      version=VERSION, engine=_engine_build())
    encoder = encoder or load_encoding(settings.token_encoding)
    memory = settings.memory_limit_bytes or container_memory_limit()
    plan = cache_plan(memory, settings.cache_memory_bytes,
                      shared_cache=cache is not None or settings.redis_url is not None,
                      in_process=settings.memory_cache_bytes)
    counter = TokenCounter(encoder, cache_bytes=plan.token_counts,
                           pretokenizer=pretokenizer(encoder))
    strategies = plugins.load_strategies(builtin_strategies(plan.compaction),
                                         discover or plugins._installed)
    caches = EngineCaches(plan.reading)
    formats = build_formats()
    cache = cache if cache is not None else build_cache(settings, metrics, plan, tracer)
    providers = build_providers(settings.llm_providers,
                                os.environ if environ is None else environ)
    llm = LLMClient(providers, metrics, policy=RetryPolicy(attempts=settings.llm_retries),
                    budget_s=settings.llm_budget_s,
                    models=[settings.synthesis_model] if settings.synthesis_model else (),
                    allowed_models=settings.llm_allowed_models, tracer=tracer)
    gateway = LLMGateway(llm, cache, metrics, ttl_s=settings.cache_ttl_s,
                         wait_s=settings.llm_budget_s,
                         default_model=settings.synthesis_model) if llm.available else None
    handles = HandleStore(cache, ttl_s=settings.expand_ttl_s, retry_s=settings.redis_pause_s)
    webhooks = build_webhooks(settings, metrics, tracer)
    emitter = webhooks.emitter
    body_bytes = body_budget(memory, settings.max_body_bytes, plan.total)
    large = LargeRequests(settings.large_requests or large_requests(memory, body_bytes,
                                                                    plan.total),
                          settings.large_request_wait_s)
    runner = Runner(formats, settings, metrics, gateway, handles, emitter,
                    cache_ttl_s={"summarize-recall": settings.recall_cache_ttl_s},
                    large=large, tracer=tracer,
                    summaries=PrefixSummaries(cache, ttl_s=settings.cache_ttl_s))
    jobs = Jobs(counter, strategies, caches, formats)
    upstream = traced_transport(upstream or Upstream(settings.proxy_timeout_s, Slots(
        settings.proxy_max_connections, settings.proxy_queue, settings.proxy_queue_timeout_s)),
        tracer)
    services = Services(
        runner=runner, jobs=jobs,
        proxy=ProxyService(runner, jobs.synthesize, formats, upstream, settings, metrics,
                           cache, handles, os.environ if environ is None else environ),
        metrics=metrics, llm=llm, cache=cache, handles=handles, settings=settings,
        bodies=Resends(plan.resent_bodies, settings.max_json_depth),
        limits=RateLimits(limiter or build_limiter(settings, metrics, tracer), metrics, counter,
                          tenants=settings.rate_limits, default=settings.rate_limit_default,
                          offload_chars=settings.offload_chars),
    )
    metrics.warm_path = warm_path(services.bodies, strategies, counter, caches,
                                  cache).register(metrics.registry)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await llm.start()
        await cache.start()
        await webhooks.start()
        try:
            async with tools.running():
                yield
        finally:
            await webhooks.stop(settings.webhook_drain_s)
            await close_all([("the upstream pool", upstream.aclose),
                             ("the LLM clients", llm.aclose),
                             ("the cache", cache.aclose),
                             ("the rate limiter", services.limits.limiter.aclose),
                             ("the trace exporter", tracing.aclose)],
                            _CLOSE_GRACE_S)

    app = FastAPI(
        lifespan=lifespan,
        telemetry=telemetry(tracing),
        generate_unique_id_function=operation_id,
        title="contextsynth",
        version=VERSION,
        summary="Context compression for LLM agents.",
        description="POST an agent's transcript; get compact context back in the same wire "
                    "format, still valid for its provider, with a receipt of what was dropped.",
    )
    app.openapi = lambda: _openapi_with_problems(app)  # type: ignore[method-assign]
    app.state.services = services
    app.state.webhooks = webhooks
    app.state.settings = settings
    errors.install(app)
    for routes in (synthesize, history, trace, rescue, expand, recall, reflect, ops, proxy):
        mount(app, routes.router)
    if settings.bench_echo:
        mount(app, echo.router)
    # MCP's streamable HTTP: an ASGI app of the SDK's, outside the OpenAPI document (its
    # protocol is JSON-RPC, described by MCP itself).
    tools = MCPEndpoint(app, VERSION, services, max_body_bytes=body_bytes)
    app.routes.append(Route(MCP_PATH, tools, methods=["GET", "POST", "DELETE"],
                            include_in_schema=False))
    # Outermost last: metrics and logs see the 413s the body limit sends.
    set_by = "CONTEXTSYNTH_MAX_BODY_BYTES" if body_bytes == settings.max_body_bytes else \
        "the worker's memory (its limit, or CONTEXTSYNTH_MEMORY_LIMIT_BYTES)"
    app.add_middleware(BodyLimit, max_bytes=body_bytes, read_timeout_s=settings.body_timeout_s,
                       set_by=set_by)
    app.add_middleware(RequestRecords, metrics=metrics)
    if tracing.enabled:
        app.add_middleware(SpanAttributes)  # inside the request id, which it reads
    app.add_middleware(RequestIds)  # outermost: every answer and log line carries the id
    return app


def warm_path(bodies: Resends, strategies: Mapping[str, Strategy], counter: TokenCounter,
              engine: EngineCaches, cache: Cache) -> WarmPath:
    """The caches of this process, for /metrics: those a resending agent's call is
    answered from first, then every other memo and the in-process cache."""
    caches: dict[str, Callable[[], CacheUsage]] = {"resent_bodies": lambda: bodies.usage}
    fast = strategies.get("fast")
    if isinstance(fast, FastStrategy):
        for name in fast.usage():
            caches[name] = partial(_named, fast.usage, name)
    caches["token_counts"] = lambda: counter.cache.usage
    for name in engine.usage():
        caches[name] = partial(_named, engine.usage, name)
    if isinstance(cache, MemoryCache):
        caches["in_process_cache"] = cache.usage
    return WarmPath(caches)


def _named(usage: Callable[[], Mapping[str, CacheUsage]], name: str) -> CacheUsage:
    return usage()[name]


def build_cache(settings: Settings, metrics: Metrics, plan: CachePlan,
                tracer: Tracer = NO_TRACER) -> Cache:
    """Redis when configured (behind the fail-open rule), else an in-process cache."""
    if settings.redis_url is None:
        return MemoryCache(settings.memory_cache_entries, plan.in_process)
    return FailOpenCache(RedisCache(settings.redis_url, cluster=settings.redis_cluster,
                                    timeout_s=settings.redis_timeout_s, tracer=tracer),
                         metrics, pause_s=settings.redis_pause_s)


def build_limiter(settings: Settings, metrics: Metrics,
                  tracer: Tracer = NO_TRACER) -> Limiter:
    """With Redis and any limit configured, buckets in Redis shared by every replica
    (behind the fail-open rule); else this process's own."""
    if settings.redis_url is None or not (settings.rate_limits or settings.rate_limit_default):
        return MemoryLimiter()
    return FailOpenLimiter(RedisLimiter(settings.redis_url, cluster=settings.redis_cluster,
                                        timeout_s=settings.redis_timeout_s, tracer=tracer),
                           metrics, pause_s=settings.redis_pause_s)


def _openapi_with_problems(app: FastAPI) -> dict[str, Any]:
    """Error responses are served as application/problem+json, and the bearer key is
    optional (configured keys make it required); say so in the contract."""
    if app.openapi_schema is None:
        schema = get_openapi(title=app.title, version=app.version, summary=app.summary,
                             description=app.description, routes=app.routes)
        for path in schema["paths"].values():
            for operation in path.values():
                if "security" in operation:
                    # Keys are the operator's choice: without them every call is allowed.
                    operation["security"] = [{}, *operation["security"]]
                for status, response in operation.get("responses", {}).items():
                    content = response.get("content", {})
                    if status[0] in "45" and "application/json" in content:
                        response["content"] = {
                            "application/problem+json": content["application/json"]}
        app.openapi_schema = schema
    return app.openapi_schema


def factory() -> FastAPI:
    """Entry for ``uvicorn --factory`` (each worker process): settings from the
    environment, and the process's garbage collector and allocator set for a server's
    heap."""
    settings = Settings()
    app = create_app(settings)
    bound_headers(settings.header_timeout_s)
    collector.tune(settings.gc_young_threshold)
    allocator.return_large_blocks(settings.malloc_mmap_threshold_bytes)
    return app
