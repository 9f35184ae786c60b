"""The jobs as MCP tools, through the official SDK's own client: over streamable HTTP
against `contextsynth serve`, and over stdio against `contextsynth mcp`. A tool takes its
route's request model, answers as the route does, and keeps the route's tenant rules."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator

import httpx
import httpx2
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


class Recorded:
    """An SDK client's HTTP client whose key can be taken away, and the answers it got."""

    def __init__(self, url: str, key: str | None, origin: str | None = None) -> None:
        self.url = url
        self.key = key
        self.origin = origin
        self.answers: list[httpx2.Response] = []

    async def _request(self, request: httpx2.Request) -> None:
        if self.key:
            request.headers["authorization"] = f"Bearer {self.key}"
        if self.origin:
            request.headers["origin"] = self.origin

    async def _response(self, response: httpx2.Response) -> None:
        self.answers.append(response)

    def client(self) -> Client:
        http = httpx2.AsyncClient(timeout=30, event_hooks={
            "request": [self._request], "response": [self._response]})
        return Client(streamable_http_client(self.url, http_client=http))


def refusals(answers: list[httpx2.Response], status: int) -> list[httpx2.Response]:
    return [r for r in answers if r.status_code == status]


async def not_connected(caller: Recorded) -> None:
    """The client could not start its session: every error under it is the SDK's own
    (the transport reports a refused HTTP request as an MCP error)."""
    try:
        async with caller.client():
            pass
    except Exception as exc:  # the SDK's task groups wrap it
        leaves = list(_leaves(exc))
        assert leaves and all(isinstance(e, MCPError) for e in leaves), leaves
        return
    raise AssertionError("the client started a session")


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc


@pytest.mark.parametrize("key", [None, "cs-key-wrong"])
async def test_the_sdk_client_without_a_valid_key_gets_an_http_401(url, key):
    caller = Recorded(url, key)
    await not_connected(caller)
    assert caller.answers  # its probe and its initialize, both refused at HTTP
    assert {r.status_code for r in caller.answers} == {401}
    assert {r.headers["www-authenticate"] for r in caller.answers} == {"Bearer"}


async def test_a_key_taken_away_mid_session_is_an_http_401_for_list_and_call(url):
    caller = Recorded(url, "cs-key-alpha")
    outcomes: list[object] = []
    async with caller.client() as client:
        listed = await client.list_tools()
        caller.key = None  # as after the key was revoked: the client no longer has it
        for attempt in (client.list_tools(), client.call_tool("summarize_recall", {
                "query": "Which seat?", "memories": [{"id": "m1", "text": "An aisle seat."}]})):
            try:
                outcomes.append(await attempt)
            except MCPError as exc:
                outcomes.append(exc)
    assert listed.tools
    assert all(isinstance(o, MCPError) for o in outcomes), outcomes
    refused = refusals(caller.answers, 401)
    assert len(refused) == 2
    assert all(r.headers["www-authenticate"] == "Bearer" for r in refused)


async def test_the_sdk_client_from_a_web_origin_not_allowed_gets_a_403(url):
    caller = Recorded(url, "cs-key-alpha", origin="https://evil.example")
    await not_connected(caller)
    assert caller.answers and {r.status_code for r in caller.answers} == {403}


async def test_the_event_stream_needs_a_key_and_opens_with_one(url):
    accept = {"accept": "text/event-stream"}
    async with httpx.AsyncClient(timeout=30) as http:
        async with http.stream("GET", url, headers=accept) as stream:  # heads only
            refused = (stream.status_code, stream.headers.get("www-authenticate"))
        async with http.stream("GET", url, headers={
                **accept, "authorization": "Bearer cs-key-alpha"}) as stream:
            opened = (stream.status_code, stream.headers["content-type"])
    assert refused == (401, "Bearer")
    assert opened == (200, "text/event-stream")


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
