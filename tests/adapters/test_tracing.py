"""Tracing's setup from the OTEL_* variables, and the pieces the adapters share."""

import asyncio

import pytest
from opentelemetry.context import attach, detach
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
from opentelemetry.trace import INVALID_SPAN, NoOpTracer, set_span_in_context

from app.adapters.tracing import (
    Tracing,
    TracingConfigError,
    current_traceparent,
    links,
    redacted,
    span,
    tracing_from_environ,
    with_trace_context,
)

ENDPOINT = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}


def exporters(tracing: Tracing) -> list[object]:
    provider = tracing.provider
    assert isinstance(provider, TracerProvider)
    processors = provider._active_span_processor._span_processors
    assert all(isinstance(p, BatchSpanProcessor) for p in processors)
    return [p._batch_processor._exporter for p in processors]


@pytest.mark.parametrize("environ", [
    {},
    {"OTEL_SERVICE_NAME": "agents"},  # naming the service turns nothing on
    {"OTEL_TRACES_EXPORTER": "none", **ENDPOINT},
    {"OTEL_SDK_DISABLED": "true", **ENDPOINT},
    {"OTEL_SDK_DISABLED": "TRUE", "OTEL_TRACES_EXPORTER": "otlp"},
], ids=["nothing", "service-name", "exporter-none", "sdk-disabled", "sdk-disabled-upper"])
def test_off_unless_an_exporter_or_endpoint_is_set(environ):
    tracing = tracing_from_environ(environ)
    assert not tracing.enabled and tracing.provider is None
    assert isinstance(tracing.tracer, NoOpTracer)


@pytest.mark.parametrize("environ", [
    ENDPOINT,
    {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"},
    {"OTEL_TRACES_EXPORTER": "otlp"},
    {"OTEL_TRACES_EXPORTER": " OTLP ", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"},
], ids=["endpoint", "traces-endpoint", "exporter", "exporter-spaced"])
def test_an_endpoint_or_the_otlp_exporter_turns_it_on(environ):
    tracing = tracing_from_environ(environ)
    try:
        assert tracing.enabled
        assert [type(e) for e in exporters(tracing)] == [OTLPSpanExporter]
        resource = tracing.provider.resource
        assert resource.attributes["service.name"] == "contextsynth"
        assert resource.attributes["service.version"]
    finally:
        asyncio.run(tracing.aclose())


def test_the_service_name_and_a_second_exporter_come_from_the_variables():
    tracing = tracing_from_environ({"OTEL_TRACES_EXPORTER": "otlp,console",
                                    "OTEL_SERVICE_NAME": "agents-eu"})
    try:
        assert [type(e) for e in exporters(tracing)] == [OTLPSpanExporter, ConsoleSpanExporter]
        assert tracing.provider.resource.attributes["service.name"] == "agents-eu"
    finally:
        asyncio.run(tracing.aclose())


@pytest.mark.parametrize(("environ", "says"), [
    ({"OTEL_TRACES_EXPORTER": "zipkin"}, "zipkin, which this service does not ship"),
    ({**ENDPOINT, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "'grpc'"),
    ({**ENDPOINT, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"}, "'http/json'"),
])
def test_what_it_cannot_do_fails_at_start_saying_why(environ, says):
    with pytest.raises(TracingConfigError, match=says):
        tracing_from_environ(environ)


def test_a_provider_handed_in_is_used_and_left_to_its_owner():
    provider = TracerProvider()
    tracing = Tracing(provider)
    assert tracing.enabled and tracing.provider is provider
    asyncio.run(tracing.aclose())
    with tracing.tracer.start_as_current_span("still open") as current:
        assert current.is_recording()  # not shut down: the test's to shut
    provider.shutdown()


def test_off_a_span_is_one_shared_context_that_does_nothing():
    tracer = NoOpTracer()
    first, second = span(tracer, "a"), span(tracer, "b", root=True)
    assert first is second
    with first as current:
        assert current is INVALID_SPAN
        assert current_traceparent() == ""


def test_the_trace_context_replaces_the_callers_and_keeps_the_rest():
    provider = TracerProvider()
    tracer = provider.get_tracer("test")
    sent = [("Authorization", "Bearer k"), ("TraceParent", "00-" + "1" * 32 + "-" + "2" * 16
                                            + "-01"), ("x-custom", "1")]
    assert with_trace_context(sent) == [("Authorization", "Bearer k"), ("x-custom", "1")]
    with tracer.start_as_current_span("call") as current:
        context = current.get_span_context()
        out = dict(with_trace_context(sent))
        assert out["traceparent"] == current_traceparent() == \
            f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"
        assert "TraceParent" not in out and out["x-custom"] == "1"
    provider.shutdown()


def test_a_kept_traceparent_becomes_a_link_and_garbage_none():
    provider = TracerProvider()
    with provider.get_tracer("test").start_as_current_span("request") as current:
        kept = current_traceparent()
    [link] = links(kept)
    assert (link.context.trace_id, link.context.span_id) == (
        current.get_span_context().trace_id, current.get_span_context().span_id)
    assert links("") == [] and links("00-zz-yy-01") == []
    token = attach(set_span_in_context(INVALID_SPAN))
    try:
        assert current_traceparent() == ""
    finally:
        detach(token)
    provider.shutdown()


def test_a_url_on_a_span_carries_no_credentials():
    assert redacted("https://user:pw@generativelanguage.example.com:8443/v1beta/models/"
                    "gemini:generateContent?key=AIza-secret&alt=sse") == (
        "https://generativelanguage.example.com:8443/v1beta/models/gemini:generateContent"
        "?key=REDACTED&alt=REDACTED")
    assert redacted("http://127.0.0.1:9/v1/messages") == "http://127.0.0.1:9/v1/messages"
