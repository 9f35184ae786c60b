"""A client that leaves mid-body: its request is counted as the client's (499, as proxies
count it) and logged without a traceback, never as the service's 500, on the jobs, the
proxy and MCP alike."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from starlette.requests import ClientDisconnect

from app.main import create_app
from app.settings import Settings
from tests.support.build import coding_run

pytestmark = pytest.mark.anyio


def _scope(path: str, length: int) -> dict[str, Any]:
    return {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1", "method": "POST", "scheme": "http", "path": path,
            "raw_path": path.encode(), "root_path": "", "query_string": b"",
            "headers": [(b"content-type", b"application/json"),
                        (b"content-length", str(length).encode()),
                        (b"accept", b"application/json, text/event-stream")],
            "server": ("test", 80), "client": ("127.0.0.1", 1), "state": {}}


async def _leave_mid_body(app: Any, path: str, body: bytes,
                          whole: bool = False) -> list[dict[str, Any]]:
    """Half the body (or all of it), then the client is gone; what the app sent back."""
    incoming = [{"type": "http.request", "body": body if whole else body[:len(body) // 2],
                 "more_body": not whole}, {"type": "http.disconnect"}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return incoming.pop(0) if incoming else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(_scope(path, len(body)), receive, send)
    return sent


def _counted(registry: CollectorRegistry, route: str, status: str) -> float:
    return sum(s.value for m in registry.collect() if m.name == "contextsynth_requests"
               for s in m.samples if s.name == "contextsynth_requests_total"
               and s.labels["route"] == route and s.labels["status"] == status)


@pytest.mark.parametrize(("path", "body"), [
    ("/synthesize", {"messages": coding_run(6)}),
    ("/v1/chat/completions", {"model": "gpt-4o-mini", "messages": coding_run(6)}),
    ("/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "synthesize", "arguments": {"messages": coding_run(6)}}}),
])
async def test_a_client_that_leaves_mid_body_is_a_499_logged_without_a_traceback(
        encoder, caplog, path, body):
    registry = CollectorRegistry()
    app = create_app(Settings(), registry=registry, encoder=encoder, discover=lambda: [],
                     environ={})
    caplog.set_level(logging.INFO)
    async with app.router.lifespan_context(app):
        await _leave_mid_body(app, path, json.dumps(body).encode())
    assert _counted(registry, path, "499") == 1
    assert _counted(registry, path, "500") == 0
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert not any(r.exc_info for r in caplog.records)
    [access] = [r for r in caplog.records if r.name == "app.access"]
    assert access.levelno == logging.INFO and access.status == 499  # type: ignore[attr-defined]


async def test_a_route_that_finds_its_client_gone_answers_499_not_500(encoder, caplog):
    registry = CollectorRegistry()
    app = create_app(Settings(), registry=registry, encoder=encoder, discover=lambda: [],
                     environ={})

    async def reads_on() -> None:
        raise ClientDisconnect()

    app.add_api_route("/reads-on", reads_on, methods=["POST"])
    caplog.set_level(logging.INFO)
    async with app.router.lifespan_context(app):
        sent = await _leave_mid_body(app, "/reads-on", b"{}", whole=True)
    assert _counted(registry, "/reads-on", "499") == 1
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert all(m.get("status") != 500 for m in sent)
