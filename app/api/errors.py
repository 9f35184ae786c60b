"""Every error becomes an RFC 9457 problem+json response, here and nowhere else."""

from __future__ import annotations

import logging
import math
import uuid
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.adapters.llm import base as llm
from app.context import request_id
from app.engine import errors as e
from app.service.limits import SettingExceeded
from app.service.origins import OriginNotAllowed
from app.service.proxy import ProxyHeaderInvalid
from app.service.rate_limits import OverLimit, RateLimited, TooManyTokens
from app.service.server_keys import NotAProxyRoute, ServerKeyRefused

PROBLEM_TYPE = "urn:contextsynth:problem:{slug}"
# A body with thousands of mistakes gets the first of them, not megabytes of them.
MAX_ERRORS = 20
MEDIA_TYPE = "application/problem+json"
# The status of a request whose client closed the connection before it was answered (as
# nginx counts it): the client's doing, not a server error.
CLIENT_LEFT = 499
log = logging.getLogger(__name__)

STATUS: dict[type[e.ContextsynthError], int] = {
    e.Unauthorized: 401,
    e.HandleNotFound: 404,
    e.HandlesUnavailable: 503,
    e.InvalidTranscript: 422,
    e.UnknownFormat: 422,
    e.AmbiguousFormat: 422,
    e.InvalidOption: 422,
    e.BudgetTooSmall: 422,
    ProxyHeaderInvalid: 400,
    ServerKeyRefused: 403,
    OriginNotAllowed: 403,
    NotAProxyRoute: 404,
    e.InvalidNumber: 422,
    e.MalformedBody: 400,
    e.UnknownStrategy: 422,
    e.LimitExceeded: 413,
    RateLimited: 429,
    TooManyTokens: 413,
    e.StrategyFailed: 500,
    e.LLMNotConfigured: 503,
    e.UpstreamFailed: 502,
    e.UpstreamTimeout: 504,
    e.UpstreamBusy: 503,
    e.Overloaded: 503,
    llm.LLMError: 502,
    llm.LLMTimeout: 504,
    llm.CircuitOpen: 503,
}


def problem(
    status: int, slug: str, title: str, detail: str, request: Request | None = None,
    **extra: Any,
) -> JSONResponse:
    body: dict[str, Any] = {
        "type": PROBLEM_TYPE.format(slug=slug), "title": title, "status": status,
        "detail": detail,
    }
    if request is not None:
        body["instance"] = request.url.path
    body.update({k: v for k, v in extra.items() if v is not None})
    rid = request_id.get()
    if rid is not None:
        body["request_id"] = rid
    return JSONResponse(body, status_code=status, media_type=MEDIA_TYPE)


def _status_of(exc: e.ContextsynthError) -> int:
    for cls in type(exc).__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return 500


def _openai_error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "server_error", "param": None,
                      "code": "proxy_busy"}}


def _anthropic_error(message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": "overloaded_error", "message": message}}


def _gemini_error(message: str) -> dict[str, Any]:
    return {"error": {"code": 503, "message": message, "status": "UNAVAILABLE"}}


# A busy proxy answers in the error shape of the provider the caller's SDK talks to: the
# SDK reads its message and, on a 503 with Retry-After, retries by itself.
PROVIDER_ERRORS = {"openai": _openai_error, "anthropic": _anthropic_error,
                   "gemini": _gemini_error}


def _anthropic_invalid(message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}


# A contextsynth header the proxy cannot use, likewise: the SDK raises its bad request.
PROVIDER_INVALID = {"anthropic": _anthropic_invalid}


@dataclass(frozen=True, slots=True)
class _ProviderNames:
    """What each provider calls an error: OpenAI's code, Anthropic's type, Gemini's
    status."""

    openai: str
    anthropic: str
    gemini: str


def _refusal(names: _ProviderNames, upstream: str, message: str,
             status: int) -> dict[str, Any]:
    """A refusal in the provider's error shape (here each name is the error's type, or
    Gemini's status)."""
    if upstream == "anthropic":
        return {"type": "error", "error": {"type": names.anthropic, "message": message}}
    if upstream == "gemini":
        return {"error": {"code": status, "message": message, "status": names.gemini}}
    return {"error": {"message": message, "type": names.openai, "param": None, "code": None}}


# What the proxy refuses on a provider route, in that provider's error shape: the SDK
# raises its PermissionDeniedError (403) or NotFoundError (404) with the message.
PROVIDER_REFUSALS: dict[type[e.ContextsynthError], _ProviderNames] = {
    ServerKeyRefused: _ProviderNames("permission_error", "permission_error",
                                     "PERMISSION_DENIED"),
    NotAProxyRoute: _ProviderNames("invalid_request_error", "not_found_error", "NOT_FOUND"),
}


_LIMIT_NAMES: dict[type[OverLimit], _ProviderNames] = {
    RateLimited: _ProviderNames("rate_limit_exceeded", "rate_limit_error", "RESOURCE_EXHAUSTED"),
    TooManyTokens: _ProviderNames("request_too_large", "request_too_large", "INVALID_ARGUMENT"),
}


def _openai_limit(exc: OverLimit, status: int) -> dict[str, Any]:
    # OpenAI's type says what ran out: "requests" or "tokens".
    return {"error": {"message": exc.detail, "type": exc.limit.partition("_")[0],
                      "param": None, "code": _LIMIT_NAMES[type(exc)].openai}}


def _anthropic_limit(exc: OverLimit, status: int) -> dict[str, Any]:
    return {"type": "error", "error": {"type": _LIMIT_NAMES[type(exc)].anthropic,
                                       "message": exc.detail}}


def _gemini_limit(exc: OverLimit, status: int) -> dict[str, Any]:
    return {"error": {"code": status, "message": exc.detail,
                      "status": _LIMIT_NAMES[type(exc)].gemini}}


# A tenant's limit on a proxied call, likewise: on a 429 the SDK raises its
# RateLimitError (and, retrying, waits Retry-After); a 413 it does not retry.
PROVIDER_LIMITS = {"openai": _openai_limit, "anthropic": _anthropic_limit,
                   "gemini": _gemini_limit}


_FAILURE_NAMES: dict[int, _ProviderNames] = {
    502: _ProviderNames("upstream_unreachable", "api_error", "UNAVAILABLE"),
    504: _ProviderNames("upstream_timeout", "timeout_error", "DEADLINE_EXCEEDED"),
}


def _openai_failure(message: str, status: int) -> dict[str, Any]:
    return {"error": {"message": message, "type": "server_error", "param": None,
                      "code": _FAILURE_NAMES[status].openai}}


def _anthropic_failure(message: str, status: int) -> dict[str, Any]:
    return {"type": "error", "error": {"type": _FAILURE_NAMES[status].anthropic,
                                       "message": message}}


def _gemini_failure(message: str, status: int) -> dict[str, Any]:
    return {"error": {"code": status, "message": message,
                      "status": _FAILURE_NAMES[status].gemini}}


# An upstream that could not be reached or stayed silent, likewise: the SDK raises its
# own server error (and retries a 502 or 504 as it would the provider's).
PROVIDER_FAILURES = {"openai": _openai_failure, "anthropic": _anthropic_failure,
                     "gemini": _gemini_failure}


async def domain_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, e.ContextsynthError)
    if isinstance(exc, e.UpstreamBusy) and exc.upstream in PROVIDER_ERRORS:
        response = JSONResponse(PROVIDER_ERRORS[exc.upstream](exc.detail), status_code=503)
    elif isinstance(exc, e.UpstreamFailed) and exc.upstream in PROVIDER_FAILURES:
        status = _status_of(exc)
        response = JSONResponse(PROVIDER_FAILURES[exc.upstream](exc.detail, status),
                                status_code=status)
    elif isinstance(exc, ProxyHeaderInvalid) and exc.upstream in PROVIDER_INVALID:
        response = JSONResponse(PROVIDER_INVALID[exc.upstream](exc.detail), status_code=400)
    elif isinstance(exc, ServerKeyRefused | NotAProxyRoute):
        status = _status_of(exc)
        response = JSONResponse(_refusal(PROVIDER_REFUSALS[type(exc)], exc.upstream,
                                         exc.detail, status), status_code=status)
    elif isinstance(exc, OverLimit) and exc.upstream in PROVIDER_LIMITS:
        status = _status_of(exc)
        response = JSONResponse(PROVIDER_LIMITS[exc.upstream](exc, status), status_code=status)
    else:
        response = problem(_status_of(exc), exc.slug, exc.title, exc.detail, request,
                           pointer=exc.pointer,
                           **(exc.fields() if isinstance(exc, OverLimit | SettingExceeded)
                              else {}))
    if isinstance(exc, OverLimit):
        response.headers.update(exc.headers)  # x-ratelimit-*
    if response.status_code == 401:
        response.headers["www-authenticate"] = "Bearer"
    retry_after = getattr(exc, "retry_after", None)
    if retry_after is not None and response.status_code in (429, 502, 503, 504):
        response.headers["retry-after"] = str(max(1, math.ceil(retry_after)))
    return response


def _pointer(loc: tuple[Any, ...]) -> str:
    parts = [str(p) for p in loc[1:]] if loc and loc[0] == "body" else [str(p) for p in loc]
    return "/" + "/".join(parts)


async def validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = list(exc.errors())
    bad_json = next((err for err in errors if err.get("type") == "json_invalid"), None)
    if bad_json is not None:
        reason = (bad_json.get("ctx") or {}).get("error", "invalid JSON")
        where = bad_json.get("loc", ("body", 0))[-1]
        return problem(
            400, "malformed-json", "The request body is not valid JSON",
            f"the body could not be parsed as JSON ({reason} at character {where}). Send a "
            "JSON object with Content-Type: application/json.", request)
    items = [{"pointer": _pointer(tuple(err.get("loc", ()))), "detail": _message(err)}
             for err in errors[:MAX_ERRORS]]
    if all(err.get("type") == "too_long" for err in errors):
        # A list over its most items: the request is too large, not malformed.
        first = items[0]
        return problem(413, "limit-exceeded", e.LimitExceeded.title,
                       f"{first['pointer']}: {first['detail']}. Send fewer items, or split "
                       "the request.", request, pointer=first["pointer"])
    first = items[0] if items else {"pointer": "/", "detail": "invalid request"}
    omitted = len(errors) - len(items)
    more = f" (and {len(errors) - 1} more; see 'errors')" if len(errors) > 1 else ""
    shown = f"; 'errors' lists the first {len(items)}" if omitted else ""
    return problem(
        422, "validation-error", "The request does not match the schema",
        f"{first['pointer']}: {first['detail']}{more}{shown}. The request schema is in "
        "openapi.yaml.", request, errors=items, errors_omitted=omitted or None)


def _message(err: dict[str, Any]) -> str:
    kind = err.get("type")
    if kind == "missing":
        return "this field is required"
    if kind == "extra_forbidden":
        return "this field is not part of the API; check its spelling"
    return str(err.get("msg", "invalid value"))


async def http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    status = exc.status_code
    title = HTTPStatus(status).phrase
    if status == 404:
        detail = f"there is no endpoint at {request.url.path}; the API is listed in openapi.yaml."
    elif status == 405:
        detail = f"{request.method} is not allowed on {request.url.path}; see openapi.yaml."
    else:
        detail = str(exc.detail)
    response = problem(status, title.lower().replace(" ", "-"), title, detail, request)
    for name, value in (exc.headers or {}).items():  # Allow, on a 405
        response.headers[name] = value
    return response


async def unexpected_error(request: Request, exc: Exception) -> JSONResponse:
    ref = uuid.uuid4().hex[:12]
    log.error("unhandled error %s on %s", ref, request.url.path, exc_info=exc)
    return problem(500, "internal-error", "Internal error",
                   f"the service failed unexpectedly; the logs have the details under {ref}. "
                   "Retrying will not help until it is fixed.", request, reference=ref)


class Contained:
    """A bug's 500 that leaves the connection open.

    Starlette answers an unhandled exception with a 500 and raises it again, and the
    server then closes the connection: a client's next request on that keep-alive
    connection fails with a reset, for a fault of one request. Here the exception
    stops once its 500 is sent. Only an answer that had already begun (a stream cut
    short) goes on up, since the client cannot tell it from a whole one otherwise.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def send_started(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, send_started)
        except Exception as exc:
            if started:
                raise
            response = await unexpected_error(Request(scope), exc)
            await response(scope, receive, send)


async def client_left(request: Request, exc: Exception) -> Response:
    """A client that closed the connection while the app still read from it: nothing to
    fix here and no one to answer; counted as the client's (499), logged without a
    traceback, so client aborts page no one."""
    log.info("the client left %s %s before it was answered", request.method,
             request.url.path)
    return Response(status_code=CLIENT_LEFT)


def install(app: FastAPI) -> None:
    """The handlers, and the middleware that keeps a 500's connection open: install
    before any other middleware, so that it sits innermost, inside the request id, the
    metrics and the access log."""
    app.add_middleware(Contained)
    app.add_exception_handler(e.ContextsynthError, domain_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(ClientDisconnect, client_left)
    app.add_exception_handler(Exception, unexpected_error)
