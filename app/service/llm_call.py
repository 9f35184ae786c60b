"""Asking the synthesis LLM on behalf of a job, with the fallback rule every job shares."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from app.engine.prompts import PromptMessage
from app.llm.base import Completion, CompletionRequest, LLMError
from app.llm.client import LLMClient
from app.metrics import Metrics

DEFAULT_TEMPERATURE = 0.2


@dataclass(frozen=True, slots=True)
class LLMOptions:
    """What a request says about the synthesis call."""

    provider: str | None = None
    model: str | None = None
    temperature: float | None = None
    on_llm_error: Literal["fallback", "error"] = "fallback"


@dataclass(frozen=True, slots=True)
class Answer:
    completion: Completion | None  # None: the call failed and the job falls back
    fallback_reason: str | None = None


async def ask_llm(
    llm: LLMClient, prompt: Sequence[PromptMessage], options: LLMOptions, *,
    default_model: str | None, max_tokens: int, metrics: Metrics,
) -> Answer:
    """The completion, or the reason to fall back; raises when the request wants errors."""
    request = CompletionRequest(
        tuple(prompt), model=options.model or default_model,
        temperature=DEFAULT_TEMPERATURE if options.temperature is None
        else options.temperature,
        max_tokens=max_tokens)
    try:
        return Answer(await llm.complete(request, options.provider))
    except LLMError as exc:
        if options.on_llm_error == "error":
            raise
        metrics.fallbacks.labels(exc.reason).inc()
        return Answer(None, f"{exc.reason}: {exc.detail}")
