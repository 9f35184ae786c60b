"""Reach the services ``create_app`` built, from a request."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request

from app.llm.client import LLMClient
from app.metrics import Metrics
from app.service.synthesize import SynthesizeService


@dataclass(frozen=True, slots=True)
class Services:
    synthesize: SynthesizeService
    metrics: Metrics
    llm: LLMClient


def services(request: Request) -> Services:
    found: Services = request.app.state.services
    return found
