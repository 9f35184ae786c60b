"""Reach the services ``create_app`` built, from a request."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request

from app.adapters.cache import Cache
from app.adapters.llm.client import LLMClient
from app.adapters.metrics import Metrics
from app.adapters.resends import Resends
from app.service.handles import HandleStore
from app.service.jobs import Jobs
from app.service.proxy import ProxyService
from app.service.rate_limits import RateLimits
from app.service.runner import Runner
from app.settings import Settings


@dataclass(frozen=True, slots=True)
class Services:
    runner: Runner
    jobs: Jobs
    proxy: ProxyService
    metrics: Metrics
    llm: LLMClient
    cache: Cache
    handles: HandleStore
    settings: Settings
    bodies: Resends
    limits: RateLimits


async def services(request: Request) -> Services:
    # async: FastAPI runs a plain function dependency in a worker thread, a trip that
    # cost more than the lookup, on every request.
    found: Services = request.app.state.services
    return found
