"""What every provider takes and gives, and how calls fail."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import httpx

from app.engine.errors import ContextsynthError
from app.engine.prompts import PromptMessage


@dataclass(frozen=True, slots=True)
class CompletionRequest:
    messages: Sequence[PromptMessage]
    model: str | None = None  # None: the provider's default
    temperature: float = 0.0
    max_tokens: int = 1024


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True, slots=True)
class Completion:
    text: str
    model: str
    provider: str
    usage: Usage
    # The provider stopped at max_tokens (finish_reason "length", stop_reason
    # "max_tokens"): the text ends where it was cut, not where the model ended it.
    cut: bool = False


class Provider(Protocol):
    name: str
    default_model: str
    # The highest sampling temperature the API takes (Anthropic's range is 0 to 1).
    max_temperature: float

    async def complete(self, http: httpx.AsyncClient, request: CompletionRequest) -> Completion:
        ...


class LLMError(ContextsynthError):
    """A call to an LLM provider failed; ``reason`` is short enough for a metric label."""

    slug = "llm-failed"
    title = "The LLM provider call failed"
    reason = "error"
    retryable = False

    def __init__(self, detail: str, *, retry_after: float | None = None) -> None:
        super().__init__(detail)
        self.retry_after = retry_after


class LLMTimeout(LLMError):
    slug = "llm-timeout"
    title = "The LLM provider did not answer in time"
    reason = "timeout"
    retryable = True


class LLMRateLimited(LLMError):
    slug = "llm-rate-limited"
    title = "The LLM provider is rate limiting"
    reason = "rate_limited"
    retryable = True


class LLMServerError(LLMError):
    slug = "llm-server-error"
    title = "The LLM provider failed"
    reason = "server_error"
    retryable = True


class LLMBadResponse(LLMError):
    slug = "llm-bad-response"
    title = "The LLM provider answered with something unusable"
    reason = "bad_response"


class LLMRejected(LLMError):
    slug = "llm-rejected"
    title = "The LLM provider rejected the request"
    reason = "rejected"


class CircuitOpen(LLMError):
    slug = "llm-circuit-open"
    title = "Calls to the LLM provider are paused after repeated failures"
    reason = "circuit_open"
