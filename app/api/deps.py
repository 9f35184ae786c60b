"""Reach the services ``create_app`` built, from a request."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request

from app.cache import Cache
from app.llm.client import LLMClient
from app.metrics import Metrics
from app.service.handles import HandleStore
from app.service.history import HistoryService
from app.service.memory_jobs import RecallService, ReflectService
from app.service.rescue import RescueService
from app.service.synthesize import SynthesizeService
from app.service.trace import TraceService
from app.settings import Settings


@dataclass(frozen=True, slots=True)
class Services:
    synthesize: SynthesizeService
    history: HistoryService
    trace: TraceService
    rescue: RescueService
    recall: RecallService
    reflect: ReflectService
    metrics: Metrics
    llm: LLMClient
    cache: Cache
    handles: HandleStore
    settings: Settings


def services(request: Request) -> Services:
    found: Services = request.app.state.services
    return found
