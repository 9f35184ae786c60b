"""When to send a request again, and how long to wait first.

The service answers 503 with Retry-After when waiting helps (it is full, its LLM
provider is paused, its handle store is away), and a gateway in front of it may answer
429 or 503. An answer with Retry-After is tried again after that wait. One without it
is tried again after a growing wait, unless it is the service's own problem document:
the service says Retry-After whenever waiting helps, so its 503 without one (no LLM
configured) stands. Other statuses are the request's own fault or need a person.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC
from email.utils import parsedate_to_datetime

import httpx

# Wall-clock seconds since the epoch (an HTTP-date Retry-After is read against it).
Clock = Callable[[], float]
Sleep = Callable[[float], None]
AsyncSleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True)
class RetryPolicy:
    """``attempts``: tries in all, the first included (1: never retry).
    ``statuses``: the answers worth another try.
    ``backoff``: the first wait when the answer has no Retry-After; it doubles each time.
    ``max_wait``: the longest wait the caller accepts; an answer that asks for longer is
    raised at once (its ``retry_after`` says how long it asked for).
    ``clock``: wall-clock time, for a Retry-After given as a date; a test passes its own."""

    attempts: int = 3
    statuses: frozenset[int] = frozenset({429, 503})
    backoff: float = 0.5
    max_wait: float = 60.0
    clock: Clock = field(default=time.time, compare=False)

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"attempts must be at least 1 (the first try), not {self.attempts}")
        if self.backoff < 0 or self.max_wait < 0:
            raise ValueError("backoff and max_wait are seconds, never negative")

    def wait_before_retry(self, response: httpx.Response, attempt: int) -> float | None:
        """Seconds to wait before trying again after ``response``, the answer to try
        number ``attempt`` (from 1); None when the answer stands."""
        if attempt >= self.attempts or response.status_code not in self.statuses:
            return None
        asked = retry_after(response, self.clock)
        if asked is None and _from_the_service(response):
            return None
        wait = asked if asked is not None else self.backoff * 2 ** (attempt - 1)
        return wait if wait <= self.max_wait else None


NO_RETRIES = RetryPolicy(attempts=1)
SERVICE_PROBLEMS = "urn:contextsynth:problem:"


def _from_the_service(response: httpx.Response) -> bool:
    """The answer is a problem document of contextsynth itself, not of a gateway."""
    if not response.headers.get("content-type", "").startswith("application/problem+json"):
        return False
    try:
        kind = response.json().get("type")
    except (ValueError, AttributeError):
        return False
    return isinstance(kind, str) and kind.startswith(SERVICE_PROBLEMS)


def retry_after(response: httpx.Response, clock: Clock = time.time) -> float | None:
    """The answer's Retry-After in seconds from now (RFC 9110: a number of seconds or an
    HTTP-date); None when it has none or it cannot be read."""
    value = response.headers.get("retry-after", "").strip()
    if not value:
        return None
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # "-0000", or a date format without a zone: HTTP dates are GMT
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - clock())
