"""MCP's protocol details, in process: tools say they are read-only and what they answer,
an unknown tool is a protocol error, a tool call is counted once, and its route's span
is a child of the /mcp request's."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_ON
from prometheus_client import CollectorRegistry

from app.api.mcp import TOOLS
from app.main import create_app
from app.settings import Settings
from tests.conftest import serve
from tests.support.build import coding_run

pytestmark = pytest.mark.anyio
ACCEPT = {"accept": "application/json, text/event-stream"}


def _rpc(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}


def _counted(registry: CollectorRegistry, route: str) -> float:
    return sum(s.value for m in registry.collect() if m.name == "contextsynth_requests"
               for s in m.samples if s.name == "contextsynth_requests_total"
               and s.labels["route"] == route)


async def test_tools_say_they_are_read_only_and_what_they_answer(make_app):
    async with serve(make_app()) as c:
        listed = (await c.post("/mcp", json=_rpc("tools/list"), headers=ACCEPT)).json()
    tools = {t["name"]: t for t in listed["result"]["tools"]}
    assert set(tools) == set(TOOLS)
    for name, tool in tools.items():
        assert tool["annotations"]["readOnlyHint"] is True, name
        assert tool["annotations"]["idempotentHint"] is True, name
        assert tool["annotations"]["destructiveHint"] is False, name
        assert tool["outputSchema"] == TOOLS[name].output.model_json_schema(
            mode="serialization"), name


async def test_an_unknown_tool_is_a_protocol_error_that_lists_the_tools(make_app):
    async with serve(make_app()) as c:
        r = await c.post("/mcp", json=_rpc("tools/call", {"name": "rewrite", "arguments": {}}),
                         headers=ACCEPT)
    error = r.json()["error"]
    assert error["code"] == -32602 and "expand, synthesize" in error["message"]


async def test_a_tool_call_is_counted_once_under_its_route(encoder):
    registry = CollectorRegistry()
    app = create_app(Settings(), registry=registry, encoder=encoder, discover=lambda: [],
                     environ={})
    call = _rpc("tools/call", {"name": "synthesize", "arguments": {"messages": coding_run(4)}})
    async with serve(app) as c:
        r = await c.post("/mcp", json=call, headers=ACCEPT)
        assert r.status_code == 200 and not r.json()["result"].get("isError"), r.text
        await c.post("/mcp", json=_rpc("tools/list"), headers=ACCEPT)
    assert _counted(registry, "/synthesize") == 1
    assert _counted(registry, "/mcp") == 1  # the list; the call was counted as its route


async def test_a_tool_calls_route_is_a_child_of_the_mcp_requests_span(encoder):
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=ALWAYS_ON)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    app = create_app(Settings(), registry=CollectorRegistry(), encoder=encoder,
                     discover=lambda: [], environ={}, tracer_provider=provider)
    call = _rpc("tools/call", {"name": "synthesize", "arguments": {"messages": coding_run(4)}})
    async with serve(app) as c:
        assert (await c.post("/mcp", json=call, headers=ACCEPT)).status_code == 200
    provider.shutdown()
    spans = exporter.get_finished_spans()
    [outer] = [s for s in spans if s.name == "POST /mcp"]
    [inner] = [s for s in spans if s.name == "POST /synthesize"]
    assert inner.context.trace_id == outer.context.trace_id
    assert inner.parent is not None and inner.parent.span_id == outer.context.span_id
