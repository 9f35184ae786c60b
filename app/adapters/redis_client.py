"""One way to reach Redis, for every user of it (cache, handles, receipts, the outbox):
a single node or a Redis Cluster, from the same settings."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from opentelemetry import trace
from opentelemetry.trace import NoOpTracer, SpanKind, Tracer
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.retry import Retry  # the asyncio one: redis.retry.Retry would be ignored
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from app.adapters.tracing import NO_TRACER

Client = Redis | RedisCluster


def redis_client(url: str, *, cluster: bool, timeout_s: float,
                 read_timeout_s: float | None = None, tracer: Tracer = NO_TRACER) -> Client:
    """A client that retries once on a broken connection (a restarted node) and, for a
    cluster, follows its redirects (MOVED, ASK) and failovers. ``read_timeout_s``: for
    blocking reads that wait longer than a command should. With a tracer, its commands
    are spans (``TracedRedis``)."""
    options: dict[str, Any] = {
        "socket_timeout": read_timeout_s or timeout_s,
        "socket_connect_timeout": timeout_s,
        "retry": Retry(ExponentialBackoff(cap=0.2, base=0.02), 1),
        "retry_on_error": [RedisConnectionError, RedisTimeoutError],
    }
    if isinstance(tracer, NoOpTracer):
        return RedisCluster.from_url(url, **options) if cluster else Redis.from_url(url,
                                                                                   **options)
    client = TracedCluster.from_url(url, **options) if cluster else \
        TracedRedis.from_url(url, **options)
    assert isinstance(client, TracedRedis | TracedCluster)
    client.commands = CommandSpans(tracer, url)
    return client


class CommandSpans:
    """A span for each command, named by it (``GET``), as OpenTelemetry's database
    conventions say; its keys and values are left out (tenants' names, transcripts).
    Only a command made inside a trace (a request, a delivery) has one: the background
    loops' polls of the outbox would each be a trace of their own, every half second."""

    def __init__(self, tracer: Tracer, url: str) -> None:
        self._tracer = tracer
        parts = urlsplit(url)
        self._where: dict[str, str | int] = {"db.system.name": "redis"}
        if parts.hostname:
            self._where["server.address"] = parts.hostname
        self._where["server.port"] = parts.port or 6379
        if parts.path.strip("/").isdigit():
            self._where["db.namespace"] = parts.path.strip("/")

    def wanted(self) -> bool:
        return trace.get_current_span().get_span_context().is_valid

    def start(self, args: tuple[Any, ...]) -> trace.Span:
        name = str(args[0].decode() if isinstance(args[0], bytes) else args[0]).upper()
        return self._tracer.start_span(name, kind=SpanKind.CLIENT, attributes={
            **self._where, "db.operation.name": name})


class TracedRedis(Redis):
    """A single node's client whose commands are spans."""

    commands: CommandSpans

    # redis-py leaves Redis.execute_command untyped.
    async def execute_command(self, *args: Any, **options: Any) -> Any:
        if not self.commands.wanted():
            return await super().execute_command(*args, **options)  # type: ignore[no-untyped-call]
        with self.commands.start(args):
            return await super().execute_command(*args, **options)  # type: ignore[no-untyped-call]


class TracedCluster(RedisCluster):
    """A cluster's client whose commands are spans (on whichever node they run)."""

    commands: CommandSpans

    async def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        if not self.commands.wanted():
            return await super().execute_command(*args, **kwargs)
        with self.commands.start(args):
            return await super().execute_command(*args, **kwargs)
