"""Proxy mode: ``POST /v1/chat/completions`` and ``POST /v1/responses`` (OpenAI),
``POST /v1/messages`` (Anthropic) and ``POST /v1beta/models/{model}:generateContent``
and ``:streamGenerateContent`` (Gemini, under ``/v1`` too) take the provider's own
request, compact its conversation and forward it; ``POST /v1/messages/count_tokens``
counts the request as it would be compacted; ``GET /v1/contextsynth/receipts/{request_id}``
says what a proxied request dropped; anything else under ``/v1`` and ``/v1beta`` goes to
its provider untouched.

An SDK gets this by changing its base URL. The provider key travels as the SDK sends
it (Authorization, x-api-key, x-goog-api-key or Gemini's ?key=) and goes upstream
untouched; contextsynth's own key,
when keys are configured, comes in ``x-contextsynth-key`` so it never reaches the
provider. These routes are not in the OpenAPI document: their bodies are the
providers' own.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import StreamingResponse
from starlette.background import BackgroundTask

from app.adapters import jsoncodec
from app.api.auth import Tenant, tenant_for
from app.api.deps import Services, services
from app.api.rate_limit import admit
from app.api.routes import operation_id
from app.context import request_id
from app.engine.errors import HandleNotFound, InvalidOption
from app.engine.jobs.synthesize.prefix import BREAKPOINT_FORMAT
from app.service.proxy import (
    MODES,
    Compacted,
    Proxied,
    ProxyCall,
    ProxyHeaderInvalid,
    budget_of,
)
from app.service.proxy_routes import COUNT_ROUTES, PROVIDER_ROUTES

router = APIRouter(include_in_schema=False, generate_unique_id_function=operation_id)
KEY_HEADER = "x-contextsynth-key"
MODE_HEADER = "x-contextsynth-mode"
EXPAND_HEADER = "x-contextsynth-expand"
BREAKPOINTS_HEADER = "x-contextsynth-cache-breakpoints"
_ROUTES = {**PROVIDER_ROUTES, **COUNT_ROUTES}


async def proxy_tenant(request: Request, svc: Annotated[Services, Depends(services)]) -> str:
    """The tenant of contextsynth's own key, from its own header: Authorization here
    is the provider's."""
    key = request.headers.get(KEY_HEADER)
    found = tenant_for(f"Bearer {key}" if key else None, svc.settings.api_keys,
                       send=f"'{KEY_HEADER}: <key>' (Authorization carries the provider's "
                       "key, passed on as it came)")
    request.state.tenant = found
    return found


ProxyTenant = Annotated[str, Depends(proxy_tenant)]


def _mode(request: Request, svc: Services) -> str:
    mode = request.headers.get(MODE_HEADER, svc.settings.proxy_mode).strip().lower()
    if mode not in MODES:
        raise InvalidOption(f"{MODE_HEADER} {mode!r} is not a mode of the proxy; use one of "
                            f"{', '.join(MODES)} (off forwards the request untouched).")
    request.state.mode = mode
    return mode


def _expand(request: Request) -> bool:
    return request.headers.get(EXPAND_HEADER, "on").strip().lower() != "off"


def _breakpoints(request: Request, path: str) -> bool:
    """Whether the caller asks for cache breakpoints. A value other than true or false
    is a 400 where breakpoints are placed (Anthropic); elsewhere the header is ignored,
    and the answer says so."""
    value = request.headers.get(BREAKPOINTS_HEADER)
    if value is None or value.strip().lower() == "false":
        return False
    route = _ROUTES[path]
    if value.strip().lower() != "true" and route.format == BREAKPOINT_FORMAT:
        raise ProxyHeaderInvalid(
            f"{BREAKPOINTS_HEADER} {value!r} is neither true nor false; send true to have "
            "cache_control breakpoints placed where the prefix later calls resend ends, "
            "or leave the header out.", upstream=route.upstream)
    return True


def _call(request: Request, svc: Services, tenant: str, body: bytes,
          rid: str | None) -> ProxyCall:
    def noted(compacted: Compacted) -> None:  # for the access log
        request.state.mode = compacted.mode
        if compacted.tokens_before:
            request.state.tokens = (compacted.tokens_before, compacted.tokens_after)

    # The route's template (Gemini's names the model: the request's path has it filled in).
    path: str = request.scope["route"].path
    budget = budget_of(request.headers.items(), _ROUTES[path].upstream)
    return ProxyCall(path, body, request.headers.items(), _mode(request, svc), tenant, rid,
                     _expand(request), noted, _breakpoints(request, path),
                     request.path_params, request.url.query, budget)


def _note_upstream(request: Request, proxied: Proxied) -> None:
    """For the access log: the provider, its answer's status and id, and the model."""
    state = request.state
    state.upstream = proxied.upstream
    state.upstream_status = proxied.status
    if (rid := proxied.upstream_request_id()) is not None:
        state.upstream_request_id = rid
    if proxied.compacted.model is not None:
        state.model = proxied.compacted.model


def _response(proxied: Proxied) -> Response:
    after = BackgroundTask(proxied.after) if proxied.after is not None else None
    response: Response
    if isinstance(proxied.body, bytes):
        response = Response(proxied.body, status_code=proxied.status, background=after)
    else:
        response = StreamingResponse(proxied.body, status_code=proxied.status,
                                     background=after)
    # Each header as many times as it came (a mapping would keep one of each name).
    response.raw_headers.extend((name.lower().encode("latin-1"), value.encode("latin-1"))
                                for name, value in proxied.headers.multi_items())
    return response


async def provider(request: Request, svc: Annotated[Services, Depends(services)],
                   tenant: ProxyTenant) -> Response:
    call = _call(request, svc, tenant, await request.body(), request_id.get())
    # The tokens the tenant sends, before compaction; a refusal in the provider's shape.
    await admit(request, svc, tenant, call.body, upstream=PROVIDER_ROUTES[call.path].upstream)
    proxied = await svc.proxy.handle(call)
    _note_upstream(request, proxied)
    return _response(proxied)


# One handler for every provider route: the path says which provider it is.
for _path in PROVIDER_ROUTES:
    router.add_api_route(_path, provider, methods=["POST"])


async def count_tokens(request: Request, svc: Annotated[Services, Depends(services)],
                       tenant: ProxyTenant) -> Response:
    """The provider's count of the request as it would be compacted (see
    ``ProxyService.count``)."""
    call = _call(request, svc, tenant, await request.body(), None)
    # A count sends nothing to the model: it draws a request, not tokens.
    await admit(request, svc, tenant, upstream=COUNT_ROUTES[call.path].upstream)
    proxied = await svc.proxy.count(call)
    _note_upstream(request, proxied)
    return _response(proxied)


for _path in COUNT_ROUTES:
    router.add_api_route(_path, count_tokens, methods=["POST"])


@router.get("/v1/contextsynth/receipts/{request_id}")
async def receipt(request_id: str, svc: Annotated[Services, Depends(services)],
                  tenant: Tenant) -> Response:
    found: dict[str, Any] | None = await svc.proxy.receipt(tenant, request_id)
    if found is None:
        raise HandleNotFound(f"no receipt for request {request_id!r}: it was not proxied "
                             "for this tenant, or it expired (CONTEXTSYNTH_EXPAND_TTL_S).")
    return Response(jsoncodec.dumps(found), media_type="application/json")


# Last, after every route above: anything else under /v1 and /v1beta (models,
# embeddings, files, Gemini's countTokens...) goes to its provider as it came, so tools
# that list models keep working through the proxy.
@router.api_route("/v1/{path:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"])
@router.api_route("/v1beta/{path:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"])
async def passed_through(request: Request, svc: Annotated[Services, Depends(services)],
                         tenant: ProxyTenant) -> Response:
    body = await request.body()
    # Refused before it is charged: a misspelt conversation route, or a route or model
    # the tenant's server-side key may not be spent on.
    upstream = svc.proxy.screen(request.method, request.url.path, request.url.query, body,
                                request.headers.items(), tenant)
    # A request, and the tokens of what it sends (a legacy completion spends as a chat
    # does); a refusal in its provider's shape.
    await admit(request, svc, tenant, body or None, upstream=upstream)
    answer = await svc.proxy.pass_through(
        request.method, request.url.path, request.url.query, body,
        request.headers.items(), tenant)
    # The provider and its status, for the access log and the relayed answers' count:
    # a provider's 5xx passed on is the provider's, not this service's (see the alerts).
    request.state.upstream = upstream
    request.state.upstream_status = answer.status
    return StreamingResponse(answer.chunks(), status_code=answer.status,
                             headers={**dict(answer.headers),
                                      "x-contextsynth-compaction": "passed"})
