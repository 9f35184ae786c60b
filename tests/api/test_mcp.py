"""The jobs as MCP tools, through the official SDK's own client: over streamable HTTP
against `contextsynth serve`, and over stdio against `contextsynth mcp`. A tool takes its
route's request model, answers as the route does, and keeps the route's tenant rules."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator

import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from app.api.auth import hash_key
from app.api.mcp import TOOLS
from tests.support.build import coding_run
from tests.support.subprocess_server import running_service

pytestmark = pytest.mark.anyio

KEYS = {"cs-key-alpha": "alpha", "cs-key-beta": "beta"}
ENV = {"CONTEXTSYNTH_API_KEYS": json.dumps({hash_key(k): t for k, t in KEYS.items()})}


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with running_service(ENV) as base:
        yield f"{base}/mcp"


def tool_text(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


def structured(result: types.CallToolResult) -> object:
    """A successful call's JSON answer, as its text says it too."""
    assert json.loads(tool_text(result)) == result.structured_content
    return result.structured_content


def _over_http(url: str, key: str | None = None) -> Client:
    headers = {"authorization": f"Bearer {key}"} if key else {}
    return Client(streamable_http_client(url, http_client=create_mcp_http_client(
        headers=headers)))


async def test_every_job_is_a_tool_taking_its_routes_request_model(url):
    async with _over_http(url, "cs-key-alpha") as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
    assert set(listed) == {"expand", "synthesize", "compress_history", "summarize_trace",
                           "reflect", "summarize_recall"}
    for name, tool in listed.items():
        assert tool.input_schema == TOOLS[name].model.model_json_schema(), name
        assert tool.description


async def test_what_a_tool_cut_its_tenant_expands_and_no_other_tenant_can(url):
    messages = coding_run(30, output_chars=3000)
    async with _over_http(url, "cs-key-alpha") as alpha:
        compacted = await alpha.call_tool("synthesize", {"messages": messages})
        assert not compacted.is_error, tool_text(compacted)
        answer = structured(compacted)
        span = answer["receipt"]["dropped"][0]
        assert len(json.dumps(answer["messages"])) < len(json.dumps(messages))
        expanded = await alpha.call_tool("expand", {"handle": span["handle"]})
    assert structured(expanded)["messages"] == messages[span["first"]:span["last"] + 1]
    async with _over_http(url, "cs-key-beta") as beta:
        other = await beta.call_tool("expand", {"handle": span["handle"]})
    assert other.is_error and "404" in tool_text(other)
    assert "tool_calls" not in tool_text(other)  # never another tenant's text
    async with _over_http(url) as nobody:
        refused = await nobody.call_tool("synthesize", {"messages": messages})
    assert refused.is_error and tool_text(refused).startswith("401")


async def test_bad_arguments_are_the_routes_own_problem(url):
    async with _over_http(url, "cs-key-alpha") as client:
        bad = await client.call_tool("summarize_recall", {"query": "seat?", "memories": "x"})
        with pytest.raises(MCPError) as unknown:  # a protocol error, not a tool's
            await client.call_tool("rewrite", {})
        no_handle = await client.call_tool("expand", {})
    assert bad.is_error and tool_text(bad).startswith("422") and "/memories" in tool_text(bad)
    assert unknown.value.code == types.INVALID_PARAMS
    assert "expand, synthesize" in unknown.value.message
    assert no_handle.is_error and "handle" in tool_text(no_handle)


async def test_over_stdio_with_the_key_it_was_started_with():
    params = StdioServerParameters(command=sys.executable, args=["-m", "app.cli", "mcp"],
                                   env={**ENV, "CONTEXTSYNTH_API_KEY": "cs-key-beta"})
    async with Client(params) as client:
        listed = await client.list_tools()
        recalled = await client.call_tool("summarize_recall", {
            "query": "Which seat?", "memories": [{"id": "m1", "text": "Mia books an aisle "
                                                  "seat."}]})
        trace = await client.call_tool("summarize_trace", {"actions": [
            {"action": "bash", "action_input": f"cat f{n}.log", "observation": f"line {n}"}
            for n in range(12)]})
    assert len(listed.tools) == len(TOOLS)
    assert structured(recalled)["sources_used"] == ["m1"]
    assert not trace.is_error and structured(trace)["recent"]
