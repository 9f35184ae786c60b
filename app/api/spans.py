"""Each request's server span: FastAPI's own (it reads an incoming ``traceparent``,
names the span by its route and sets the HTTP attributes), with what this service
knows of the request added to it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi.telemetry import TelemetryConfig
from opentelemetry import trace
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.adapters.tracing import Tracing
from app.context import request_id

# Probes and scrapes every few seconds would bury the requests' traces.
UNTRACED_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})

# What the routes record of a request (``request.state``, as the access log reads it),
# by the attribute it becomes on the server span.
_STATE_ATTRIBUTES: Mapping[str, str] = {
    "tenant": "contextsynth.tenant",
    "mode": "contextsynth.mode",
    "upstream": "contextsynth.upstream",
    "upstream_status": "contextsynth.upstream.status_code",
    "upstream_request_id": "contextsynth.upstream.request_id",
    "model": "contextsynth.model",
}


def _untraced(scope: Mapping[str, Any]) -> bool:
    return scope.get("path") in UNTRACED_PATHS


def telemetry(tracing: Tracing) -> TelemetryConfig:
    """FastAPI's OpenTelemetry settings: server spans from this app's provider, or
    none. Its metrics and logs stay off (Prometheus and the access log have those), and
    it never configures exporters of its own."""
    if not tracing.enabled:
        return {"tracing": False, "metrics": False, "logs": False, "auto_configure": False}
    return {"tracer_provider": tracing.provider, "metrics": False, "logs": False,
            "operation_spans": False, "auto_configure": False, "exclude": _untraced}


class SpanAttributes:
    """The request id, tenant, mode, tokens and upstream on the server span. They are
    set as the answer starts: FastAPI ends the span with the answer's last byte, before
    an outer middleware would see the request finish."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        current = trace.get_current_span()
        if scope["type"] != "http" or not current.is_recording():
            await self.app(scope, receive, send)
            return
        # Made here, so that a middleware's copy of the scope shares it with this one.
        state: dict[str, Any] = scope.setdefault("state", {})
        rid = request_id.get()
        if rid is not None:
            current.set_attribute("contextsynth.request_id", rid)

        async def send_noting(message: Message) -> None:
            if message["type"] == "http.response.start":
                current.set_attributes(_attributes(state))
            await send(message)

        await self.app(scope, receive, send_noting)


def _attributes(state: Mapping[str, Any]) -> dict[str, str | int]:
    found: dict[str, str | int] = {
        name: value if isinstance(value, int) else str(value)
        for key, name in _STATE_ATTRIBUTES.items()
        if (value := state.get(key)) is not None}
    tokens = state.get("tokens")
    if tokens is not None:
        found["contextsynth.tokens_before"], found["contextsynth.tokens_after"] = tokens
    return found
