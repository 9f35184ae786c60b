"""A request's draw from its tenant's rate limits, as a route takes it (see
``service.rate_limits``)."""

from __future__ import annotations

from typing import Any

from fastapi import Request

from app.api.deps import Services
from app.service.rate_limits import Admitted


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
    return await limits.admit(tenant, path, body, upstream=upstream)
