"""Tracing turned on the way an operator does: ``contextsynth serve`` with the OTEL_*
variables set, exporting OTLP over HTTP to a collector on loopback."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.support.build import coding_run
from tests.support.subprocess_server import running_service
from tests.support.threaded import ThreadedServer

CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"


class Collector:
    """What an OpenTelemetry collector's OTLP/HTTP receiver does with traces: decodes
    each export, and keeps every span with its resource's attributes."""

    def __init__(self) -> None:
        self.spans: list[tuple[dict[str, str], Any]] = []
        app = Starlette(routes=[Route("/v1/traces", self._export, methods=["POST"])])
        self._served = ThreadedServer(app, name="the collector")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._served.port}"

    async def _export(self, request: Request) -> Response:
        assert request.headers["content-type"] == "application/x-protobuf"
        export = ExportTraceServiceRequest.FromString(await request.body())
        for batch in export.resource_spans:
            resource = {a.key: a.value.string_value for a in batch.resource.attributes}
            self.spans += [(resource, s) for scope in batch.scope_spans for s in scope.spans]
        return Response(ExportTraceServiceResponse().SerializeToString(),
                        media_type="application/x-protobuf")

    def named(self, name: str, at_least: int = 1, timeout_s: float = 20.0,
              ) -> list[tuple[dict[str, str], Any]]:
        """The spans of that name, once at least ``at_least`` have come."""
        deadline = time.monotonic() + timeout_s
        while len(found := [(r, s) for r, s in self.spans if s.name == name]) < at_least:
            if time.monotonic() > deadline:
                raise AssertionError(f"no span {name!r}; got {[s.name for _, s in self.spans]}")
            time.sleep(0.05)
        return found

    def __enter__(self) -> Collector:
        self._served.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._served.stop()


@pytest.fixture(scope="module")
def world() -> Iterator[tuple[str, Collector]]:
    with Collector() as collector:
        # Exported within a tenth of a second, not the SDK's default five.
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": collector.url, "OTEL_BSP_SCHEDULE_DELAY": "100"}
        with running_service(env) as url:
            yield url, collector


def test_the_service_exports_a_requests_spans_to_the_configured_collector(world):
    url, collector = world
    r = httpx.post(f"{url}/synthesize", json={"messages": coding_run(6)}, timeout=30,
                   headers={"traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"})
    assert r.status_code == 200, r.text
    [(resource, server)] = collector.named("POST /synthesize")
    assert resource["service.name"] == "contextsynth"
    # The caller's trace goes on in the service's.
    assert server.trace_id.hex() == CALLER_TRACE and server.parent_span_id.hex() == CALLER_SPAN
    attributes = {a.key: a.value for a in server.attributes}
    assert attributes["contextsynth.mode"].string_value == "fast"
    assert attributes["http.response.status_code"].int_value == 200
    for name in ("plan synthesize", "finish synthesize"):
        [(_, step)] = collector.named(name)
        assert step.trace_id == server.trace_id and step.parent_span_id == server.span_id


def test_health_probes_send_nothing_to_the_collector(world):
    url, collector = world
    finished = len([s for _, s in collector.spans if s.name == "finish synthesize"])
    for _ in range(3):
        assert httpx.get(f"{url}/healthz").status_code == 200
    httpx.post(f"{url}/synthesize", json={"messages": coding_run(4)}, timeout=30)
    collector.named("finish synthesize", finished + 1)  # what came after the probes is in
    assert not [s for _, s in collector.spans if "healthz" in s.name]
