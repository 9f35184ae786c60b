"""Liveness, readiness and Prometheus metrics."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

from app.adapters.cache import FailOpenCache
from app.adapters.metrics import add_runtime_collectors
from app.api.deps import Services, services
from app.api.finite import FiniteJSONRoute
from app.api.routes import operation_id
from app.api.schemas.common import Health

router = APIRouter(route_class=FiniteJSONRoute, generate_unique_id_function=operation_id)


@router.get("/healthz", response_model=Health, summary="Liveness: the process serves HTTP")
async def healthz() -> Health:
    return Health(status="ok")


@router.get("/readyz", response_model=Health, summary="Readiness: dependencies are usable")
async def readyz(svc: Annotated[Services, Depends(services)]) -> Health:
    # The tokenizer is loaded before the app exists. LLM trouble degrades deep modes to
    # fast, so it is reported but does not take the pod out of rotation.
    checks = {"tokenizer": "ok"}
    for name in svc.llm.names:
        checks[f"llm:{name}"] = "circuit open" if svc.llm.breaker(name).open else "ok"
    status = "ready"
    cache = svc.cache
    if isinstance(cache, FailOpenCache):
        # Redis trouble degrades to uncached service: reported, not taken out of rotation.
        await cache.ping()
        checks["redis"] = "ok" if cache.healthy else f"unreachable: {cache.last_error}"
        status = "ready" if cache.healthy else "degraded"
    else:
        checks["cache"] = "memory"
    return Health(status=status, checks=checks)


@router.get("/metrics", summary="Prometheus metrics", response_class=Response)
async def metrics(svc: Annotated[Services, Depends(services)]) -> Response:
    registry = svc.metrics.registry
    if svc.metrics.multiprocess_dir:
        # Several worker processes: every one writes its own files; add them up here.
        registry = CollectorRegistry()
        MultiProcessCollector(  # type: ignore[no-untyped-call]
            registry, path=svc.metrics.multiprocess_dir)
        add_runtime_collectors(registry)  # process_* and python_* of the worker answering
        if svc.metrics.warm_path is not None:  # and its warm path
            registry.register(svc.metrics.warm_path)
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)
