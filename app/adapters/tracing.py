"""Tracing with OpenTelemetry: off unless the SDK's own variables ask for it.

Off (no exporter named, no OTLP endpoint set), nothing of the SDK is loaded: every
tracer handed out is the API's no-op one, ``span`` gives a shared context that does
nothing (attaching even a no-op span as the current one costs about 12 µs), FastAPI's
own server spans are turned off, and no traced transport or Redis client is put in
place.

On (``OTEL_TRACES_EXPORTER=otlp`` or ``console``, or ``OTEL_EXPORTER_OTLP_ENDPOINT`` /
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` set), an SDK provider exports in batches; the SDK
reads the rest of its variables itself (``OTEL_TRACES_SAMPLER``, ``OTEL_BSP_*``,
``OTEL_EXPORTER_OTLP_HEADERS``, ``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_PROPAGATORS``).
The provider is this app's, handed to whatever makes spans, never installed as the
process's global one: a test hands ``create_app`` a provider of its own instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from opentelemetry import propagate
from opentelemetry.context import Context
from opentelemetry.trace import (
    INVALID_SPAN,
    Link,
    NoOpTracer,
    Span,
    SpanKind,
    StatusCode,
    Tracer,
    TracerProvider,
    get_current_span,
    use_span,
)
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from opentelemetry.util.types import Attributes

from app import VERSION
from app.adapters.genai_usage import UsageReader
from app.adapters.upstream import Slots, Transport, UpstreamAnswer

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export import SpanExporter

SERVICE_NAME = "contextsynth"
NO_TRACER: Tracer = NoOpTracer()
_NO_SPAN: AbstractContextManager[Span] = nullcontext(INVALID_SPAN)
# The only OTLP transport this service ships (opentelemetry-exporter-otlp-proto-http).
_PROTOCOL = "http/protobuf"
_W3C = TraceContextTextMapPropagator()


class TracingConfigError(ValueError):
    """The OTEL_* variables ask for something this service cannot do."""


def span(tracer: Tracer, name: str, *, kind: SpanKind = SpanKind.INTERNAL,
         attributes: Attributes = None, root: bool = False,
         links: Sequence[Link] = ()) -> AbstractContextManager[Span]:
    """A span, current while the block runs (an exception in it is recorded); ``root``:
    it begins a trace of its own. With the no-op tracer, a shared context that gives
    the no-op span and does nothing else."""
    if isinstance(tracer, NoOpTracer):
        return _NO_SPAN
    return tracer.start_as_current_span(name, context=Context() if root else None, kind=kind,
                                        attributes=attributes, links=links)


def traced(current: Span) -> bool:
    """Whether ``current`` belongs to a trace (sampled or not): then its context is
    sent on, so that what is called joins the trace, or knows it was left out."""
    return current.get_span_context().is_valid


def with_trace_context(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``headers`` with the current span's trace context (W3C ``traceparent`` by
    default, as OTEL_PROPAGATORS says) in place of any the caller sent."""
    propagator = propagate.get_global_textmap()
    fields = {f.lower() for f in propagator.fields}
    carrier: dict[str, str] = {}
    propagator.inject(carrier)
    return [*((k, v) for k, v in headers if k.lower() not in fields), *carrier.items()]


def current_traceparent() -> str:
    """The current span's W3C ``traceparent`` ("" outside a trace), to be kept with
    work done later (a webhook's delivery), which links back to it."""
    context = get_current_span().get_span_context()
    if not context.is_valid:
        return ""
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"


def links(traceparent: str) -> list[Link]:
    """A link to the span a kept ``traceparent`` names (none for "" or garbage)."""
    if not traceparent:
        return []
    found = get_current_span(_W3C.extract({"traceparent": traceparent})).get_span_context()
    return [Link(found)] if found.is_valid else []


def redacted(url: str) -> str:
    """``url`` for a span: no user or password, query values replaced (a provider key
    may travel as ``?key=``)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port is not None else host
    query = urlencode([(k, "REDACTED") for k, _ in parse_qsl(parts.query,
                                                             keep_blank_values=True)])
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def server_attributes(url: str) -> dict[str, str | int]:
    parts = urlsplit(url)
    found: dict[str, str | int] = {}
    if parts.hostname:
        found["server.address"] = parts.hostname
    if parts.port is not None:
        found["server.port"] = parts.port
    return found


class Tracing:
    """This app's tracer provider, or none (tracing is off)."""

    def __init__(self, provider: TracerProvider | None = None, *, owned: bool = False) -> None:
        self.provider = provider
        self.tracer = NO_TRACER if provider is None else provider.get_tracer(SERVICE_NAME,
                                                                            VERSION)
        self._owned = owned  # made here from the environment: flushed and shut down here

    @property
    def enabled(self) -> bool:
        return not isinstance(self.tracer, NoOpTracer)

    async def aclose(self) -> None:
        """Export what is left (the SDK's shutdown blocks: a thread waits for it)."""
        shutdown = getattr(self.provider, "shutdown", None)
        if self._owned and shutdown is not None:
            await asyncio.to_thread(shutdown)


def tracing_from_environ(environ: Mapping[str, str]) -> Tracing:
    """Tracing as the OTEL_* variables in ``environ`` ask: off unless they name an
    exporter or an OTLP endpoint."""
    names = _exporters(environ)
    if not names:
        return Tracing()
    # Imported only now: with tracing off the process loads nothing of the SDK.
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    given: dict[str, str] = {"service.version": VERSION}
    if environ.get("OTEL_SERVICE_NAME"):
        given["service.name"] = environ["OTEL_SERVICE_NAME"]
    resource = Resource.create(given)
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": SERVICE_NAME}))
    provider = SdkTracerProvider(resource=resource)
    for name in names:
        provider.add_span_processor(BatchSpanProcessor(_EXPORTERS[name](environ)))
    return Tracing(provider, owned=True)


def _exporters(environ: Mapping[str, str]) -> list[str]:
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return []
    named = [n.strip().lower() for n in environ.get("OTEL_TRACES_EXPORTER", "").split(",")
             if n.strip()]
    if not named:
        endpoint = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or \
            environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        named = ["otlp"] if endpoint else []
    if "none" in named:
        return []
    unknown = [n for n in named if n not in _EXPORTERS]
    if unknown:
        raise TracingConfigError(
            f"OTEL_TRACES_EXPORTER names {', '.join(unknown)}, which this service does not "
            f"ship; use {', '.join(_EXPORTERS)} or none.")
    return list(dict.fromkeys(named))


def _otlp(environ: Mapping[str, str]) -> SpanExporter:
    protocol = (environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
                or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or _PROTOCOL).strip().lower()
    if protocol != _PROTOCOL:
        raise TracingConfigError(
            f"OTEL_EXPORTER_OTLP_PROTOCOL is {protocol!r}; this service exports OTLP over "
            f"{_PROTOCOL} only (a collector listens for it on port 4318).")
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    # The endpoint, headers, timeout and compression from the process's OTEL_* variables.
    return OTLPSpanExporter()


def _console(environ: Mapping[str, str]) -> SpanExporter:
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter

    return ConsoleSpanExporter()


# The exporters OTEL_TRACES_EXPORTER may name, by that name.
_EXPORTERS: Mapping[str, Callable[[Mapping[str, str]], SpanExporter]] = {
    "otlp": _otlp, "console": _console}


# The upstreams by their names in OpenTelemetry's GenAI conventions.
_GENAI_PROVIDERS = {"openai": "openai", "anthropic": "anthropic", "gemini": "gcp.gemini"}


class TracedTransport:
    """A ``Transport`` whose requests are client spans, with the span's trace context
    sent upstream: the provider sees this service's span as the caller. As GenAI's
    conventions time an inference, the span lasts until the answer's body has been read
    (a stream to its end, or until its reader left), and carries the token usage the
    body reported (``gen_ai.usage.*``)."""

    def __init__(self, inner: Transport, tracer: Tracer) -> None:
        self._inner = inner
        self._tracer = tracer

    @property
    def slots(self) -> Slots:
        return self._inner.slots

    async def send(self, name: str, url: str, body: bytes,
                   headers: list[tuple[str, str]], method: str = "POST",
                   model: str | None = None) -> UpstreamAnswer:
        # GenAI's names too, so that a tracing backend's LLM views find the call.
        genai = {"gen_ai.provider.name": _GENAI_PROVIDERS.get(name, name)}
        if model is not None:
            genai["gen_ai.request.model"] = model
        current = self._tracer.start_span(f"upstream {name}", kind=SpanKind.CLIENT, attributes={
            "contextsynth.upstream": name, "http.request.method": method,
            "url.full": redacted(url), **server_attributes(url), **genai})
        try:
            with use_span(current, end_on_exit=False):
                if traced(current):
                    headers = with_trace_context(headers)
                answer = await self._inner.send(name, url, body, headers, method, model)
        except BaseException:
            current.end()  # use_span recorded the exception and the error status
            raise
        current.set_attribute("http.response.status_code", answer.status)
        if answer.status >= 400:  # a client span's error, as the conventions say
            current.set_attribute("error.type", str(answer.status))
            current.set_status(StatusCode.ERROR)
        return _metered(answer, current)

    async def aclose(self) -> None:
        await self._inner.aclose()


def _metered(answer: UpstreamAnswer, current: Span) -> UpstreamAnswer:
    """``answer`` with its body read for usage as it passes, and ``current`` ended, with
    that usage, once the body is done with (read, left, or never read and dropped)."""
    usage = UsageReader()
    ended = False

    async def body() -> AsyncIterator[bytes]:
        async for chunk in answer.body:
            usage.feed(chunk)
            yield chunk

    def done() -> None:
        nonlocal ended
        if not ended:
            ended = True
            current.set_attributes(usage.attributes())
            current.end()
        answer.done()
    return UpstreamAnswer(answer.status, answer.headers, body(), answer.ended, done)


def traced_transport(transport: Transport, tracer: Tracer) -> Transport:
    """``transport`` itself when tracing is off: nothing in the way of a request."""
    return transport if isinstance(tracer, NoOpTracer) else TracedTransport(transport, tracer)
