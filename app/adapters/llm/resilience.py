"""Retries with backoff (honouring Retry-After) and a circuit breaker around a provider."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from app.adapters.llm.base import CircuitOpen, LLMError, LLMRejected


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    attempts: int = 3
    base_delay: float = 0.5
    max_delay: float = 20.0

    def delay(self, attempt: int, error: LLMError, jitter: float) -> float | None:
        """Seconds before the next try, or None when waiting would exceed ``max_delay``."""
        if error.retry_after is not None:
            return error.retry_after if error.retry_after <= self.max_delay else None
        return min(self.base_delay * 2.0**attempt * (0.5 + jitter / 2), self.max_delay)


class CircuitBreaker:
    """Open after ``threshold`` failures in a row; let one call through after ``reset_after``."""

    def __init__(self, threshold: int = 5, reset_after: float = 30.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._threshold = threshold
        self._reset_after = reset_after
        self._clock = clock
        self._failures = 0
        self._opened_at: float | None = None

    @property
    def open(self) -> bool:
        return self._opened_at is not None

    def check(self, provider: str) -> None:
        if self._opened_at is None:
            return
        waited = self._clock() - self._opened_at
        if waited < self._reset_after:
            left = self._reset_after - waited
            raise CircuitOpen(
                f"calls to provider {provider!r} are paused for {left:.0f} s more after "
                f"{self._failures} failures in a row; retry after that, or ask for mode "
                "'fast'", retry_after=left)
        self._opened_at = None  # half-open: this call decides

    def record(self, ok: bool) -> None:
        if ok:
            self._failures = 0
            return
        self._failures += 1
        if self._failures >= self._threshold:
            self._opened_at = self._clock()


async def with_retries(
    call: Callable[[], Awaitable[object]],
    *, policy: RetryPolicy, breaker: CircuitBreaker, provider: str,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    jitter: Callable[[], float] = random.random,
) -> object:
    for attempt in range(policy.attempts):
        breaker.check(provider)
        try:
            result = await call()
        except LLMError as exc:
            # A rejected request is the caller's fault, not the provider's health.
            breaker.record(isinstance(exc, LLMRejected))
            last = attempt == policy.attempts - 1
            wait = policy.delay(attempt, exc, jitter()) if exc.retryable else None
            if last or wait is None:
                raise
            await sleep(wait)
            continue
        breaker.record(True)
        return result
    raise AssertionError("unreachable: the loop returns or raises")
