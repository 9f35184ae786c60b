"""``GET /expand/{handle}``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from app.api.auth import Tenant
from app.api.deps import Services, services
from app.api.finite import FiniteJSONRoute
from app.api.routes import operation_id
from app.api.schemas.common import PROBLEMS, ExpandResponse
from app.engine.errors import HandleNotFound

router = APIRouter(route_class=FiniteJSONRoute, generate_unique_id_function=operation_id)


# Without Redis, a handle can also be gone before its time: the in-process store is
# bounded in bytes.
_EVICTED = (", or sooner when the in-process store (CONTEXTSYNTH_MEMORY_CACHE_BYTES) is "
            "full, the least recently used first; CONTEXTSYNTH_REDIS_URL keeps them for the "
            "whole time")


@router.get(
    "/expand/{handle}",
    response_model=ExpandResponse,
    responses={404: PROBLEMS[404], 401: PROBLEMS[401], 503: {
        **PROBLEMS[503], "description": "The handle store (Redis) cannot be reached and this "
        "replica does not hold the handle; retry after Retry-After seconds."}},
    summary="The original messages (or actions) that a compaction replaced",
)
async def expand(handle: str, svc: Annotated[Services, Depends(services)],
                 tenant: Tenant) -> JSONResponse:
    document = await svc.handles.load(tenant, handle)
    if document is None:
        raise HandleNotFound(
            f"no span with handle {handle!r} is stored for this tenant; handles come from a "
            f"receipt and expire {svc.settings.expand_ttl_s:g} s after the call that made "
            f"them{_EVICTED if svc.settings.redis_url is None else ''}.", pointer="/handle")
    return JSONResponse(document)
