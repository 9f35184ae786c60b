"""A request's draw from its tenant's rate limits, as a route takes it (see
``service.rate_limits``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from fastapi import Request

from app.api.deps import Services
from app.service.rate_limits import Admitted

# Set while a request runs routes of this app in process (an MCP tool call): that
# request drew its one request from the tenant's limits, so the route it calls draws
# only its body's tokens, and the call costs what the same HTTP call would. A context
# variable, not a header, so that no caller from outside can claim it.
_drawn: ContextVar[bool] = ContextVar("contextsynth_request_drawn", default=False)


@contextmanager
def request_drawn() -> Iterator[None]:
    """Within: routes called in process draw no request of their own."""
    token = _drawn.set(True)
    try:
        yield
    finally:
        _drawn.reset(token)


async def admit(request: Request, svc: Services, tenant: str, body: Any = None, *,
                upstream: str | None = None) -> Admitted | None:
    """One request (and the tokens of ``body``, when there is one) drawn from the
    tenant's limits, or RateLimited / TooManyTokens raised; ``upstream``: the provider
    whose error shape a proxied caller gets. Nothing to do without limits."""
    limits = svc.limits
    if not limits.enabled:
        return None
    route: Any = request.scope.get("route")
    path = str(route.path) if route is not None else "unmatched"
    return await limits.admit(tenant, path, body, upstream=upstream,
                              request=not _drawn.get())
