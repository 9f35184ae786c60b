"""contextsynth's jobs as MCP tools: ``POST /mcp`` on the service (streamable HTTP) and
``contextsynth mcp`` (stdio), both with the official ``mcp`` SDK's low-level server.

A tool is its HTTP route under another name: its input schema is the route's request
model, and a call is that request, sent to the same app in process with the caller's
credentials (the HTTP transport passes the MCP request's Authorization header on; stdio
sends the key it was started with). Validation, limits, tenants and receipts are the
HTTP API's own, and so are the errors: a refused call comes back as a tool error whose
text is the problem document's title and detail.

The HTTP transport is stateless and answers in JSON (no session to pin a client to a
replica, as every other route of this stateless service). Before any MCP processing a
request passes the checks every route's caller passes, at HTTP: a browser's ``Origin``
(403, see ``service.origins``), the API key when keys are configured (401 with
``WWW-Authenticate: Bearer``, as MCP's authorization spec asks, whatever the JSON-RPC
method, and for the GET stream too), and one request from the tenant's rate limits
(429); a tool call's route then draws only its body's tokens.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx
import mcp_types as types
from fastapi import FastAPI
from mcp.server import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, Field
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from app.adapters.tracing import with_trace_context
from app.api.auth import authenticate
from app.api.deps import Services
from app.api.middleware import COUNTED_INSIDE
from app.api.rate_limit import admit, request_drawn
from app.api.schemas.common import ExpandResponse
from app.api.schemas.history import CompressHistoryRequest, CompressHistoryResponse
from app.api.schemas.recall import SummarizeRecallRequest, SummarizeRecallResponse
from app.api.schemas.reflect import ReflectRequest, ReflectResponse
from app.api.schemas.synthesize import SynthesizeRequest, SynthesizeResponse
from app.api.schemas.trace import SummarizeTraceRequest, SummarizeTraceResponse
from app.service.origins import check_origin

PATH = "/mcp"
Context = ServerRequestContext[Any, Any]
# The caller's credentials, passed on to the route a tool calls, and the trace context
# of the /mcp request's span (see ``MCPEndpoint``): the route's span is its child.
_PASSED_ON = ("authorization", "x-request-id", "traceparent", "tracestate")
# Every tool reads and computes: none changes what a caller has, and the same call
# answers the same (clients may run them without asking).
_ANNOTATIONS = types.ToolAnnotations(read_only_hint=True, destructive_hint=False,
                                     idempotent_hint=True)


class ExpandArguments(BaseModel):
    handle: str = Field(description="A handle from a receipt or a note (cs_...).")


@dataclass(frozen=True, slots=True)
class ToolRoute:
    """One tool: the route it calls and the model of its arguments."""

    name: str
    method: str
    path: str  # ``{handle}``-style fields of the arguments go into it
    model: type[BaseModel]
    output: type[BaseModel]  # the route's response model
    description: str

    def request(self, arguments: Mapping[str, Any]) -> tuple[str, dict[str, Any] | None]:
        """The path to call and the JSON body (None for a GET)."""
        if self.method == "GET":
            return self.path.format(**{k: quote(str(v), safe="")
                                       for k, v in arguments.items()}), None
        return self.path, dict(arguments)


TOOLS = {t.name: t for t in (
    ToolRoute("expand", "GET", "/expand/{handle}", ExpandArguments, ExpandResponse,
              "The original messages (or actions) a compaction replaced, by the handle a "
              "note or receipt names."),
    ToolRoute("synthesize", "POST", "/synthesize", SynthesizeRequest, SynthesizeResponse,
              "Compact an agent's transcript for its next call, in its own wire format, "
              "with a receipt of what was dropped."),
    ToolRoute("compress_history", "POST", "/compress-history", CompressHistoryRequest,
              CompressHistoryResponse,
              "Summarize a conversation's older turns into one message, keeping the last."),
    ToolRoute("summarize_trace", "POST", "/summarize-trace", SummarizeTraceRequest,
              SummarizeTraceResponse,
              "Summarize a ReAct trace's older actions, keeping the recent ones whole."),
    ToolRoute("reflect", "POST", "/reflect", ReflectRequest, ReflectResponse,
              "Reflect on an iteration of tool calls: what worked, what failed, what next."),
    ToolRoute("summarize_recall", "POST", "/summarize-recall", SummarizeRecallRequest,
              SummarizeRecallResponse,
              "The memories that answer a query, condensed, each cited by its id."),
)}


def _listed(route: ToolRoute) -> types.Tool:
    return types.Tool(name=route.name, description=route.description,
                      input_schema=route.model.model_json_schema(),
                      output_schema=route.output.model_json_schema(mode="serialization"),
                      annotations=_ANNOTATIONS)


def _result(response: httpx.Response) -> types.CallToolResult:
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.status_code == 200 and isinstance(body, dict):
        return types.CallToolResult(content=[types.TextContent(type="text", text=response.text)],
                                    structured_content=body)
    if isinstance(body, dict) and "title" in body:
        text = f"{response.status_code} {body['title']}: {body.get('detail', '')}".strip()
    else:
        text = f"{response.status_code}: {response.text[:500]}"
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                is_error=True)


class Tools:
    """Lists the tools and answers their calls through ``client`` (the app in process)."""

    def __init__(self, client: httpx.AsyncClient,
                 headers: Mapping[str, str] | None = None) -> None:
        self._client = client
        self._headers = dict(headers or {})  # stdio: the key it was started with

    async def list(self, _ctx: Context, _params: types.PaginatedRequestParams | None,
                   ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[_listed(t) for t in TOOLS.values()])

    async def call(self, ctx: Context, params: types.CallToolRequestParams,
                   ) -> types.CallToolResult:
        route = TOOLS.get(params.name)
        if route is None:  # a protocol error, as MCP's spec says, not a tool's
            raise MCPError(types.INVALID_PARAMS, f"no tool {params.name!r}; the tools are "
                           f"{', '.join(TOOLS)}.")
        arguments = params.arguments or {}
        if route.method == "GET":
            invalid = _invalid(route.model, arguments)
            if invalid is not None:
                return invalid
        path, body = route.request(arguments)
        outer = getattr(ctx.request, "scope", None)  # over HTTP, the /mcp request
        if isinstance(outer, dict):
            outer.setdefault("state", {})[COUNTED_INSIDE] = True
        response = await self._client.request(route.method, path, json=body,
                                              headers={**self._headers, **_passed_on(ctx)})
        return _result(response)


def _invalid(model: type[BaseModel], arguments: Mapping[str, Any]) -> types.CallToolResult | None:
    """A GET tool's arguments checked here (a POST's are checked by its route)."""
    try:
        model.model_validate(arguments)
    except ValueError as exc:
        return types.CallToolResult(content=[types.TextContent(
            type="text", text=f"422 the arguments are not valid: {exc}")], is_error=True)
    return None


def _passed_on(ctx: Context) -> dict[str, str]:
    # Over HTTP the context carries the MCP request itself; over stdio there is none.
    headers = getattr(ctx.request, "headers", None)
    if headers is None:
        return {}
    return {name: headers[name] for name in _PASSED_ON if name in headers}


def mcp_server(tools: Tools, version: str) -> Server[Any]:
    return Server("contextsynth", version=version,
                  instructions="Compact an agent's context, and read back what was cut: "
                  "notes name handles (cs_...) that the expand tool returns whole.",
                  on_list_tools=tools.list, on_call_tool=tools.call)


class MCPEndpoint:
    """``POST /mcp``: the streamable-HTTP transport, stateless, answering in JSON. It
    serves while the app runs (``running``, entered by the app's lifespan: a session
    manager and a client of the app, new each time, as a lifespan may run again)."""

    def __init__(self, app: ASGIApp, version: str, services: Services, *,
                 max_body_bytes: int) -> None:
        self._app = app
        self._version = version
        self._services = services
        self._max_body_bytes = max_body_bytes
        self._manager: StreamableHTTPSessionManager | None = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with in_process(self._app) as client:
            manager = StreamableHTTPSessionManager(
                app=mcp_server(Tools(client), self._version), json_response=True,
                stateless=True, max_request_body_size=self._max_body_bytes)
            async with manager.run():
                self._manager = manager
                try:
                    yield
                finally:
                    self._manager = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        manager = self._manager
        if manager is None:  # only between the app's start-up and shutdown
            problem = {"type": "about:blank", "title": "Service Unavailable", "status": 503,
                       "detail": "the MCP endpoint serves once the service has started; "
                       "retry shortly."}
            await JSONResponse(problem, status_code=503, media_type="application/problem+json",
                               headers={"retry-after": "1"})(scope, receive, send)
            return
        # Refused at HTTP before the SDK reads a byte: a caller without a key costs a
        # header check, not a JSON-RPC exchange (raised here, answered by app.api.errors).
        request = Request(scope)
        check_origin(request.headers.get("origin"), self._services.settings.mcp_allowed_origins)
        found = authenticate(request, self._services)
        await admit(request, self._services, found)
        # The trace context of this request's span, where the tools' calls read it; the
        # state shared with the copy, where a call marks the request counted inside.
        scope.setdefault("state", {})
        headers = [(k.decode("latin-1"), v.decode("latin-1"))
                   for k, v in scope.get("headers", [])]
        traced = [(k.encode("latin-1"), v.encode("latin-1"))
                  for k, v in with_trace_context(headers)]
        with request_drawn():  # this request was drawn above; a tool's route is not
            await manager.handle_request({**scope, "headers": traced}, receive, send)


def in_process(app: ASGIApp) -> httpx.AsyncClient:
    """A client of ``app`` itself; a tool's call takes as long as its job does."""
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                             base_url="http://contextsynth.mcp", timeout=None)


async def serve_stdio(app: FastAPI, version: str, api_key: str | None) -> None:
    """``contextsynth mcp``: the tools over this process's stdin and stdout, on ``app``
    run in process; ``api_key``: sent with every call, as a caller of the HTTP API
    would (needed when the service has keys configured)."""
    headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
    async with app.router.lifespan_context(app), in_process(app) as client:
        server = mcp_server(Tools(client, headers), version)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
