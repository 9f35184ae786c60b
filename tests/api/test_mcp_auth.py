"""``/mcp`` on a service with API keys, through the HTTP API in process: a caller without
a valid key gets an HTTP 401 with ``WWW-Authenticate`` whatever it asks, before the MCP
SDK reads the request; a caller's requests draw from its tenant's limits; and a browser
page from an origin nobody allowed gets a 403, keys or not."""

from __future__ import annotations

from typing import Any

import pytest
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from prometheus_client import CollectorRegistry
from pydantic import ValidationError

from app.api.auth import hash_key
from app.main import create_app
from app.settings import Settings
from tests.conftest import serve
from tests.support.build import coding_run

pytestmark = pytest.mark.anyio
ACCEPT = {"accept": "application/json, text/event-stream"}
KEYS = {hash_key("cs-key-alpha"): "alpha"}
ALPHA = {**ACCEPT, "authorization": "Bearer cs-key-alpha"}
CALL = ("tools/call", {"name": "summarize_recall", "arguments": {
    "query": "Which seat?", "memories": [{"id": "m1", "text": "Mia books an aisle seat."}]}})
INITIALIZE = ("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                             "clientInfo": {"name": "test", "version": "0"}})


def _rpc(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}


@pytest.fixture
def handled(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The methods of the requests that reached the MCP SDK's transport."""
    seen: list[str] = []
    original = StreamableHTTPSessionManager.handle_request

    async def counted(self: StreamableHTTPSessionManager, scope: Any, receive: Any,
                      send: Any) -> None:
        seen.append(scope["method"])
        await original(self, scope, receive, send)

    monkeypatch.setattr(StreamableHTTPSessionManager, "handle_request", counted)
    return seen


def _app(encoder: Any, registry: CollectorRegistry | None = None, **settings: Any) -> Any:
    return create_app(Settings(**settings), registry=registry or CollectorRegistry(),
                      encoder=encoder, discover=lambda: [], environ={})


def _counted(registry: CollectorRegistry, status: str) -> float:
    return sum(s.value for m in registry.collect() if m.name == "contextsynth_requests"
               for s in m.samples if s.name == "contextsynth_requests_total"
               and s.labels["route"] == "/mcp" and s.labels["status"] == status)


@pytest.mark.parametrize(("method", "params"), [INITIALIZE, ("tools/list", {}), CALL,
                                               ("ping", {})])
@pytest.mark.parametrize("authorization", [None, "Bearer cs-key-wrong", "Basic Y3M6a2V5"])
async def test_every_method_without_a_valid_key_is_an_http_401(encoder, handled, method,
                                                                params, authorization):
    headers = {**ACCEPT, **({"authorization": authorization} if authorization else {})}
    async with serve(_app(encoder, api_keys=KEYS)) as c:
        r = await c.post("/mcp", json=_rpc(method, params), headers=headers)
    assert r.status_code == 401, r.text
    assert r.headers["www-authenticate"] == "Bearer"
    assert r.headers["content-type"] == "application/problem+json"
    assert "API key" in r.json()["detail"]
    assert handled == []


async def test_the_event_stream_and_session_end_need_a_key_too(encoder, handled):
    async with serve(_app(encoder, api_keys=KEYS)) as c:
        stream = await c.get("/mcp", headers={"accept": "text/event-stream"})
        end = await c.delete("/mcp")
    for r in (stream, end):
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer", r.text
    assert handled == []


async def test_a_valid_key_is_served_as_before(encoder, handled):
    async with serve(_app(encoder, api_keys=KEYS)) as c:
        started = await c.post("/mcp", json=_rpc(*INITIALIZE), headers=ALPHA)
        called = await c.post("/mcp", json=_rpc(*CALL), headers=ALPHA)
        refused = await c.post("/mcp", json=_rpc("tools/list"), headers={
            **ACCEPT, "authorization": "Bearer cs-key-beta"})
    assert started.status_code == 200 and started.json()["result"]["serverInfo"]
    assert called.status_code == 200, called.text
    assert called.json()["result"]["structuredContent"]["sources_used"] == ["m1"]
    assert refused.status_code == 401
    assert handled == ["POST", "POST"]


async def test_a_flood_without_a_key_never_reaches_the_mcp_sdk(encoder, handled):
    registry = CollectorRegistry()
    async with serve(_app(encoder, registry, api_keys=KEYS)) as c:
        answers = [await c.post("/mcp", json=_rpc(*INITIALIZE), headers=ACCEPT)
                   for _ in range(200)]
    assert {r.status_code for r in answers} == {401}
    assert handled == []  # the SDK parsed none of them
    assert _counted(registry, "401") == 200
    assert _counted(registry, "200") == 0


async def test_mcp_requests_draw_from_the_tenants_request_limit(encoder):
    limits = {"alpha": {"requests_per_minute": 2}}
    async with serve(_app(encoder, api_keys=KEYS, rate_limits=limits)) as c:
        first = await c.post("/mcp", json=_rpc(*INITIALIZE), headers=ALPHA)
        second = await c.post("/mcp", json=_rpc("tools/list"), headers=ALPHA)
        third = await c.post("/mcp", json=_rpc("tools/list"), headers=ALPHA)
    assert first.status_code == 200 and second.status_code == 200
    assert third.status_code == 429, third.text
    assert third.json()["limit"] == "requests_per_minute"
    assert int(third.headers["retry-after"]) >= 1


async def test_a_tool_call_draws_one_request_not_two(encoder):
    limits = {"alpha": {"requests_per_minute": 2, "tokens_per_minute": 100_000}}
    call = _rpc("tools/call", {"name": "synthesize", "arguments": {
        "messages": coding_run(4)}})
    async with serve(_app(encoder, api_keys=KEYS, rate_limits=limits)) as c:
        answers = [await c.post("/mcp", json=call, headers=ALPHA) for _ in range(3)]
    for r in answers[:2]:
        assert r.status_code == 200 and not r.json()["result"].get("isError"), r.text
    assert answers[2].status_code == 429  # refused at HTTP, not as a tool error
    assert answers[2].json()["limit"] == "requests_per_minute"


@pytest.mark.parametrize("keys", [KEYS, {}], ids=["keys", "no-keys"])
@pytest.mark.parametrize("origin", ["https://evil.example", "http://localhost.evil.example",
                                    "null", "http://127.0.0.1.nip.io:8080",
                                    "https://app.example.com:8443"])
async def test_a_page_from_an_origin_not_allowed_gets_a_403(encoder, handled, keys, origin):
    app = _app(encoder, api_keys=keys, mcp_allowed_origins=["https://app.example.com"])
    async with serve(app) as c:
        r = await c.post("/mcp", json=_rpc("tools/list"),
                         headers={**ALPHA, "origin": origin})
    assert r.status_code == 403, r.text
    assert "CONTEXTSYNTH_MCP_ALLOWED_ORIGINS" in r.json()["detail"]
    assert handled == []


@pytest.mark.parametrize("origin", ["http://localhost:6274", "http://127.0.0.1",
                                    "https://[::1]:8443", "HTTPS://App.Example.com"])
async def test_pages_on_this_machine_and_the_listed_origins_are_served(encoder, origin):
    app = _app(encoder, api_keys=KEYS, mcp_allowed_origins=["https://app.example.com/"])
    async with serve(app) as c:
        r = await c.post("/mcp", json=_rpc("tools/list"), headers={**ALPHA, "origin": origin})
        bad = await c.post("/mcp", json=_rpc("tools/list"),
                           headers={**ALPHA, "origin": "https://other.example.com"})
    assert r.status_code == 200 and r.json()["result"]["tools"], r.text
    assert bad.status_code == 403


async def test_without_keys_mcp_needs_none(encoder):
    async with serve(_app(encoder)) as c:
        r = await c.post("/mcp", json=_rpc(*CALL), headers=ACCEPT)
        bad = await c.post("/mcp", json=_rpc(*CALL),
                           headers={**ACCEPT, "origin": "https://evil.example"})
    assert r.status_code == 200 and not r.json()["result"].get("isError"), r.text
    assert bad.status_code == 403


def test_an_allowed_origin_that_is_no_origin_is_refused_at_start_up():
    with pytest.raises(ValidationError, match="scheme://host"):
        Settings(mcp_allowed_origins=["app.example.com"])
    with pytest.raises(ValidationError, match="not an origin"):
        Settings(mcp_allowed_origins=["https://app.example.com/mcp"])
