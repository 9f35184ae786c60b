"""The request path of the job routes, kept lean.

Every job route has one shape: a JSON body model, the request, the services and the
tenant. FastAPI's general handler serves that shape with machinery the shape never
uses (form parsing, dependency graphs and their caches, telemetry hooks, a content
type parsed as an e-mail header); profiled under the agent-loop replay it took about a
quarter of a millisecond a request, a fifth of what HTTP adds to the engine's time.

``JobRoute`` serves that shape directly and answers exactly as FastAPI would: the same
body read once (by ``finite``), the same 400 for malformed JSON, the 401 before the body
is checked, and the same validation errors, located under ``body``. Between the key and
the validation, the tenant's rate limits draw the request and its body's tokens (the
``tenant`` dependency of other routes draws only the request). The route is still
declared to FastAPI as usual, so the OpenAPI document does not change.

FastAPI has no hook for a route's handler but ``APIRoute.get_route_handler``, and the
shape is read from its dependency model (``Dependant``), which is not public API. A
route whose shape cannot be read (another shape, or a FastAPI release that reads its
endpoints differently) is refused when the app is built, not served slowly: every job
route is checked by ``tests/api/test_job_route.py``, and the whole suite runs through
this path.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError

from app.api.auth import authenticate, tenant
from app.api.deps import services
from app.api.finite import FiniteJSONRoute
from app.api.rate_limit import admit
from app.api.schemas.common import CONVERSATION_KEYS
from app.service.conversation import HEADER, conversation_key
from app.service.work import Worker

Handler = Callable[[Request], Coroutine[Any, Any, Response]]


@dataclass(frozen=True, slots=True)
class _Shape:
    """The parameter names of a job endpoint."""

    body: str
    model: type[BaseModel]
    request: str
    services: str
    tenant: str


class JobRoute(FiniteJSONRoute):
    def inner_handler(self) -> Handler:
        shape = self._shape()
        if shape is None:
            raise TypeError(
                f"{self.path}: a JobRoute takes one JSON body model, the request, the "
                "services and the tenant, and FastAPI's reading of this endpoint found "
                "another shape; declare it with FiniteJSONRoute instead.")
        return _handler(shape, self.endpoint)

    def _shape(self) -> _Shape | None:
        d = self.dependant
        if (len(d.body_params) != 1 or self.body_field is None or d.query_params
                or d.path_params or d.header_params or d.cookie_params
                or d.request_param_name is None or len(d.dependencies) != 2):
            return None
        model = self.body_field.field_info.annotation
        names = {dep.call: dep.name for dep in d.dependencies}
        svc, who = names.get(services), names.get(tenant)
        if not (isinstance(model, type) and issubclass(model, BaseModel)) or not svc or not who:
            return None
        return _Shape(self.body_field.name, model, d.request_param_name, svc, who)


def _handler(shape: _Shape, endpoint: Callable[..., Awaitable[Response]]) -> Handler:
    async def handle(request: Request) -> Response:
        value, size = await _body(request)
        svc = await services(request)
        found = authenticate(request, svc)
        admitted = await admit(request, svc, found, value)
        # Validating a large body builds a model per item of its lists: tens of
        # milliseconds at the limits, held off the event loop as the engine's work is.
        work = Worker(offload=size > svc.settings.offload_chars)
        body = await work(_validated, shape.model, value)
        response = await endpoint(**{shape.body: body, shape.request: request,
                                     shape.services: svc, shape.tenant: found})
        key = conversation_key(request.headers.get(HEADER), value, CONVERSATION_KEYS)
        if key is not None:
            response.headers[HEADER] = key
        if admitted is not None:
            response.headers.update(admitted.headers())
        return response
    return handle


def _validated(model: type[BaseModel], value: Any) -> BaseModel:
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise RequestValidationError(
            [{**err, "loc": ("body", *err["loc"])} for err in exc.errors(include_url=False)],
            body=value) from None


async def _body(request: Request) -> tuple[Any, int]:
    """The body as FastAPI would hand it to the model, and its size in bytes: parsed
    when it is declared JSON (``finite`` has parsed it already), the bytes when it is not
    (the model then says it wants an object); an empty body is a missing one."""
    raw = await request.body()
    if not raw:
        raise RequestValidationError(
            [{"type": "missing", "loc": ("body",), "msg": "Field required", "input": None}])
    kind = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    main, _, sub = kind.partition("/")
    if main != "application" or not (sub == "json" or sub.endswith("+json")):
        return raw, len(raw)
    value = await request.json()  # parsed, or refused, by the route class (``finite``)
    # Nothing reads the bytes again: let them go while the job runs, instead of holding
    # a second copy of a large body to the end of the request. (Starlette's cache of
    # request.body(); if it were renamed this would fail every job request's tests.)
    size = len(raw)
    del request._body, raw
    return value, size
