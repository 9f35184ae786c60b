"""Proxy mode: ``POST /v1/chat/completions`` and ``POST /v1/responses`` (OpenAI) and
``POST /v1/messages`` (Anthropic) take the provider's own request, compact its
conversation and forward it; ``POST /v1/messages/count_tokens`` counts the request
as it would be compacted; ``GET /v1/contextsynth/receipts/{request_id}`` says what a
proxied request dropped.

An SDK gets this by changing its base URL. The provider key travels as the SDK sends
it (Authorization or x-api-key) and goes upstream untouched; contextsynth's own key,
when keys are configured, comes in ``x-contextsynth-key`` so it never reaches the
provider. These routes are not in the OpenAPI document: their bodies are the
providers' own.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import StreamingResponse
from starlette.background import BackgroundTask

from app.adapters import jsoncodec
from app.adapters.upstream import forwarded
from app.api.auth import Tenant, tenant_for
from app.api.deps import Services, services
from app.api.routes import operation_id
from app.context import request_id
from app.engine.errors import HandleNotFound, InvalidOption
from app.service.conversation import HEADER as CONVERSATION
from app.service.conversation import conversation_key
from app.service.proxy import COUNT_ROUTES, MODES, PROVIDER_ROUTES, Compacted, Expansions

router = APIRouter(include_in_schema=False, generate_unique_id_function=operation_id)
KEY_HEADER = "x-contextsynth-key"
MODE_HEADER = "x-contextsynth-mode"
EXPAND_HEADER = "x-contextsynth-expand"


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


def _ours(compacted: Compacted, sent_key: str | None) -> dict[str, str]:
    headers = {"x-contextsynth-mode": compacted.mode,
               "x-contextsynth-compaction": compacted.compaction,
               "x-contextsynth-tokens-before": str(compacted.tokens_before),
               "x-contextsynth-tokens-after": str(compacted.tokens_after),
               "x-contextsynth-stable-messages": str(compacted.stable_messages)}
    if compacted.receipt is not None:
        headers["x-contextsynth-receipt"] = str(compacted.receipt["receipt_id"])
    if compacted.reason is not None:
        headers["x-contextsynth-reason"] = compacted.reason
    # The caller's key as sent, else the one its conversation's start gives (none when
    # the proxy did not read the body: mode off); an ingress routes the next step on it.
    key = conversation_key(sent_key, None, ()) or compacted.conversation
    if key is not None:
        headers[CONVERSATION] = key
    return headers


def _mode(request: Request, svc: Services) -> str:
    mode = request.headers.get(MODE_HEADER, svc.settings.proxy_mode).strip().lower()
    if mode not in MODES:
        raise InvalidOption(f"{MODE_HEADER} {mode!r} is not a mode of the proxy; use one of "
                            f"{', '.join(MODES)} (off forwards the request untouched).")
    request.state.mode = mode
    return mode


def _expand(request: Request) -> bool:
    return request.headers.get(EXPAND_HEADER, "on").strip().lower() != "off"


async def _proxy(request: Request, svc: Services, tenant: str) -> Response:
    route = PROVIDER_ROUTES[request.url.path]
    mode = _mode(request, svc)
    expand = _expand(request)
    compacted = await svc.proxy.compact(route, await request.body(), mode, tenant,
                                        request_id.get(), expand=expand)
    request.state.mode = compacted.mode
    if compacted.tokens_before:
        request.state.tokens = (compacted.tokens_before, compacted.tokens_after)
    headers = svc.proxy.credentials(route, tenant, forwarded(request.headers.items()))
    ours = _ours(compacted, request.headers.get(CONVERSATION))
    if compacted.offered is not None and compacted.offered.get("stream"):
        # The rounds' streams as one; what they cost is known at its end (the receipt).
        first, chunks, done = await svc.proxy.stream_expanding(route, compacted, headers,
                                                               tenant)
        return StreamingResponse(chunks, status_code=first.status,
                                 headers={**dict(first.headers), **ours},
                                 background=BackgroundTask(_save, svc, tenant, compacted,
                                                           done))
    if compacted.offered is not None:
        # Read whole: the model may call the expand tool, which this service answers.
        answered = await svc.proxy.answer_expanding(route, compacted, headers, tenant)
        done = answered.expansions
        return Response(answered.body, status_code=answered.status, headers={
            **dict(answered.headers), **ours, "x-contextsynth-expansions": str(done.rounds),
            "x-contextsynth-expansion-tokens": str(done.tokens)},
            background=BackgroundTask(_save, svc, tenant, compacted, done))
    answer = await svc.proxy.forward(route, compacted.body, headers, compacted)
    # Passed on chunk by chunk as the upstream sends them, streamed answers or not.
    return StreamingResponse(answer.chunks(), status_code=answer.status,
                             headers={**dict(answer.headers), **ours},
                             background=BackgroundTask(svc.proxy.save_receipt, tenant,
                                                       compacted))


async def _save(svc: Services, tenant: str, compacted: Compacted, done: Expansions) -> None:
    """The receipt, with the handles the expand tool read back, once the answer is out."""
    if compacted.receipt is not None:
        compacted = replace(compacted, receipt={**compacted.receipt, "expanded": done.handles})
    await svc.proxy.save_receipt(tenant, compacted)


async def provider(request: Request, svc: Annotated[Services, Depends(services)],
                   tenant: ProxyTenant) -> Response:
    return await _proxy(request, svc, tenant)


# One handler for every provider route: the path says which provider it is.
for _path in PROVIDER_ROUTES:
    router.add_api_route(_path, provider, methods=["POST"])


async def count_tokens(request: Request, svc: Annotated[Services, Depends(services)],
                       tenant: ProxyTenant) -> Response:
    """The provider's count of the request the model would receive: compacted as its
    conversation route would (the expand tool included when it would be offered), with
    no receipt, since nothing is answered. ``x-contextsynth-counted`` says which was
    counted."""
    route = COUNT_ROUTES[request.url.path]
    compacted = await svc.proxy.compact(route, await request.body(), _mode(request, svc),
                                        tenant, None, expand=_expand(request))
    headers = svc.proxy.credentials(route, tenant, forwarded(request.headers.items()))
    answer = await svc.proxy.forward(route, compacted.body, headers, compacted)
    counted = "compacted" if compacted.compaction == "compacted" else "as-sent"
    return StreamingResponse(answer.chunks(), status_code=answer.status, headers={
        **dict(answer.headers), **_ours(compacted, request.headers.get(CONVERSATION)),
        "x-contextsynth-counted": counted})


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


# Last, after every route above: anything else under /v1 (models, embeddings, files...)
# goes to its provider as it came, so tools that list models keep working through the
# proxy.
@router.api_route("/v1/{path:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"])
async def passed_through(request: Request, svc: Annotated[Services, Depends(services)],
                         tenant: ProxyTenant) -> Response:
    answer = await svc.proxy.pass_through(
        request.method, request.url.path, request.url.query, await request.body(),
        forwarded(request.headers.items()), tenant)
    return StreamingResponse(answer.chunks(), status_code=answer.status,
                             headers={**dict(answer.headers),
                                      "x-contextsynth-compaction": "passed"})
