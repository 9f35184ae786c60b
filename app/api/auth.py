"""Optional API keys. Settings hold sha256 hashes of the keys, each mapped to a tenant."""

from __future__ import annotations

import hashlib
import hmac
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from app.api.deps import Services, services
from app.api.rate_limit import admit
from app.engine.errors import Unauthorized

DEFAULT_TENANT = "default"


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def tenant_for(authorization: str | None, keys: dict[str, str], *,
               send: str = "'Authorization: Bearer <key>'") -> str:
    """The tenant of a bearer key; every configured hash is compared, in constant time.
    ``send``: how the caller passes the key, for the 401 that asks for it."""
    if not keys:
        return DEFAULT_TENANT
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized(f"this service needs an API key: send {send}.")
    digest = hash_key(token.strip())
    found = None
    for known, tenant in keys.items():
        if hmac.compare_digest(known.lower(), digest):
            found = tenant
    if found is None:
        raise Unauthorized("the API key is not valid for this service; check it, or ask "
                           "for a new one.")
    return found


# Declares the bearer scheme in the spec; the check itself stays below, so a missing or
# wrong key is a 401 problem document that says what to send.
bearer = HTTPBearer(auto_error=False, description="An API key, when the service has "
                    "keys configured (CONTEXTSYNTH_API_KEYS holds their sha256 hashes).")


def authenticate(request: Request, svc: Services) -> str:
    """The tenant of the request's bearer key (401 without a valid one)."""
    found = tenant_for(request.headers.get("authorization"), svc.settings.api_keys)
    request.state.tenant = found  # for the request's log line
    return found


async def tenant(request: Request, svc: Annotated[Services, Depends(services)],
                 _: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]) -> str:
    """The tenant, its request drawn from its rate limits. A job route reads its body
    first and draws the body's tokens with it (``job_route``)."""
    found = authenticate(request, svc)
    await admit(request, svc, found)
    return found


Tenant = Annotated[str, Depends(tenant)]
