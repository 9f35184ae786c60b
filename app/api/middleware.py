"""ASGI middleware: request bodies (size, media type, gzip), per-request metrics and the
per-request log line."""

from __future__ import annotations

import asyncio
import json
import logging
import time
import zlib
from typing import Any

from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.adapters.metrics import Metrics
from app.api.errors import CLIENT_LEFT, MEDIA_TYPE, PROBLEM_TYPE
from app.context import request_id

access = logging.getLogger("app.access")


class BodyLimit:
    """Read request bodies whole, within a limit, as JSON the routes can parse.

    The body is buffered up to the limit (the JSON parser needs all of it
    anyway), decoded when it came gzip-compressed (the limit then applies to
    what it decodes to), and replayed to the app, so nothing is half-read. A
    body that is too large, empty, in another media type or an encoding other
    than gzip gets a problem document that says so instead.
    """

    def __init__(self, app: ASGIApp, max_bytes: int, read_timeout_s: float = 30.0,
                 set_by: str = "CONTEXTSYNTH_MAX_BODY_BYTES") -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.set_by = set_by  # what to raise for a larger limit
        # A client that trickles its body holds a connection and a buffer: past this
        # time it gets a 408 and the connection closes.
        self.read_timeout_s = read_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers", []))
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._too_large(scope, send, f"{int(declared)} bytes")
            return
        try:
            async with asyncio.timeout(self.read_timeout_s):
                read = await self._read(scope, receive, send)
        except TimeoutError:
            await _send_problem(
                scope, send, 408, "body-timeout", "The request body came too slowly",
                f"the body did not arrive within {self.read_timeout_s:g} s. Send it at "
                "once (a proxy in front should buffer it), or raise "
                "CONTEXTSYNTH_BODY_TIMEOUT_S.")
            return
        if read is None:
            return
        chunks, other = read
        del read
        if other is not None:
            # The client left before its body was whole (http.disconnect): there is no
            # request to run, and no one to answer (RequestRecords counts it as a 499).
            return
        if scope.get("method") in _WITH_BODY and _served(scope):
            body = _joined(chunks)
            checked = await self._checked(scope, send, headers, body)
            # While the app runs, the body is the replayed message's alone: the route
            # lets it go once parsed, and no frame here keeps a copy (a 15 MB body held
            # as chunks, joined and replayed was three copies for the whole request).
            del body
            if checked is None:
                return
            scope, chunks = checked
            del checked
        await self.app(scope, _replay(chunks, receive), send)

    async def _read(self, scope: Scope, receive: Receive, send: Send,
                    ) -> tuple[list[bytes], Message | None] | None:
        """The body's chunks (or the message that ended it early); None once a 413 was
        sent."""
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return [], message
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._too_large(scope, send, "more than that")
                return None
            chunks.append(chunk)
            more = message.get("more_body", False)
        return chunks, None

    async def _checked(self, scope: Scope, send: Send, headers: dict[bytes, bytes],
                       body: bytes) -> tuple[Scope, list[bytes]] | None:
        """The scope and body the app should see, or None once a problem was sent."""
        media = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
        if media and media != b"application/json" and not media.endswith(b"+json"):
            await _send_problem(scope, send, 415, "unsupported-media-type",
                                "The body is not declared as JSON",
                                f"this endpoint reads JSON and the body is declared as "
                                f"{media.decode('latin-1')!r}. Send it with Content-Type: "
                                "application/json (curl: -H 'content-type: application/json').")
            return None
        encoding = headers.get(b"content-encoding", b"identity").strip().lower()
        if encoding == b"gzip":
            decoded = _gunzip(body, self.max_bytes)
            if decoded is None:
                await _send_problem(scope, send, 400, "malformed-gzip",
                                    "The body is not valid gzip",
                                    "the body says Content-Encoding: gzip and does not "
                                    "decompress. Send the gzip stream whole, or drop the "
                                    "header and send plain JSON.")
                return None
            if len(decoded) > self.max_bytes:
                await self._too_large(scope, send, "more than that once decompressed")
                return None
            body = decoded
            kept = [(k, v) for k, v in scope.get("headers", [])
                    if k not in (b"content-encoding", b"content-length")]
            scope = {**scope, "headers": [*kept, (b"content-length", str(len(body)).encode())]}
        elif encoding != b"identity":
            await _send_problem(scope, send, 415, "unsupported-content-encoding",
                                "The body's encoding is not supported",
                                f"Content-Encoding {encoding.decode('latin-1')!r} is not "
                                "read here; send the body as it is or gzip-compressed.")
            return None
        if not body.strip():
            await _send_problem(scope, send, 400, "empty-body", "The request body is empty",
                                "this endpoint reads a JSON object and the body is empty. "
                                "Send the request as JSON, such as {\"messages\": [...]}.")
            return None
        return scope, [body]

    async def _too_large(self, scope: Scope, send: Send, size: str) -> None:
        await _send_problem(
            scope, send, 413, "body-too-large", "The request body is too large",
            f"this service accepts bodies up to {self.max_bytes} bytes and this one has "
            f"{size}. Send fewer or shorter messages (compress older history first), or "
            f"raise {self.set_by}.", limit=self.max_bytes)


_WITH_BODY = ("POST", "PUT", "PATCH")


def _gunzip(data: bytes, limit: int) -> bytes | None:
    """``data`` decompressed, stopping a byte past ``limit``; None if it is not gzip."""
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(data, limit + 1)
    except zlib.error:
        return None
    if len(out) <= limit and not inflater.eof:
        return None  # cut short
    return out


async def _send_problem(scope: Scope, send: Send, status: int, slug: str, title: str,
                        detail: str, **extra: Any) -> None:
    problem: dict[str, Any] = {"type": PROBLEM_TYPE.format(slug=slug), "title": title,
                               "status": status, "detail": detail,
                               "instance": scope.get("path"), **extra}
    rid = request_id.get()
    if rid is not None:
        problem["request_id"] = rid
    body = json.dumps(problem).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", MEDIA_TYPE.encode()), (b"content-length", str(len(body)).encode()),
        (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


def _joined(chunks: list[bytes]) -> bytes:
    """The chunks as one body, emptying the list: its caller's frame no longer holds
    them while the body is in use."""
    body = b"".join(chunks)
    chunks.clear()
    return body


def _replay(chunks: list[bytes], receive: Receive) -> Receive:
    """The body as one message, then the connection's own messages: a streamed answer
    listens on them for the client leaving, which must not be reported early."""
    pending: list[Message] = [{"type": "http.request", "body": _joined(chunks),
                               "more_body": False}]

    async def replayed() -> Message:
        if pending:
            return pending.pop()
        return await receive()

    return replayed


class RequestRecords:
    """What every request leaves behind: its count and time in the metrics (by route
    template, mode, status and tenant), and one log line with its endpoint, status,
    duration, tenant, mode and tokens in and out, as the route recorded them
    (``request.state``). While it runs it is counted in flight on its route."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # Made here, so that what the app notes (its copies of the scope share it) is read.
        scope.setdefault("state", {})
        status = 500  # an app that answered nothing failed, unless its client left
        answered = False
        left = False
        started = time.perf_counter()
        # Resolved before the app runs, for the in-flight gauge: the router records the
        # route it picked only once it gets there.
        route = _route(scope)
        in_flight = self.metrics.in_flight.labels(route)

        async def send_status(message: Message) -> None:
            nonlocal status, answered
            if message["type"] == "http.response.start":
                status = message["status"]
                answered = True
            await send(message)

        async def receive_seen(message_of: Receive = receive) -> Message:
            nonlocal left
            message = await message_of()
            left = left or message["type"] == "http.disconnect"
            return message

        # The app returns once a streamed answer has sent its last chunk (or its client
        # left), and the finally runs on errors and cancellation too: what goes up comes
        # down on every path.
        in_flight.inc()
        try:
            await self.app(scope, receive_seen, send_status)
        finally:
            if left and (not answered or status == CLIENT_LEFT):
                # Gone before it was answered: the client's doing, not the service's, as
                # proxies count it (nginx's 499), so client aborts page no one.
                status = CLIENT_LEFT
            in_flight.dec()
            seconds = time.perf_counter() - started
            state = scope.get("state", {})
            mode = str(state.get("mode", "none"))
            tenant = state.get("tenant")
            if not state.get(COUNTED_INSIDE):
                self.metrics.requests.labels(route, mode, str(status),
                                             str(tenant or "none")).inc()
                self.metrics.duration.labels(route, mode).observe(seconds)
            if "upstream_status" in state:
                self.metrics.proxy_responses.labels(
                    str(state["upstream"]), str(state["upstream_status"])).inc()
            tokens = state.get("tokens") or (None, None)
            access.info("%s %s %s", scope.get("method"), scope.get("path"), status, extra={
                "endpoint": route, "method": scope.get("method"), "status": status,
                "duration_ms": round(seconds * 1000, 2), "tenant": tenant,
                "mode": state.get("mode"), "tokens_in": tokens[0], "tokens_out": tokens[1],
                # A proxied call's provider, its answer and request id, and the model.
                **{k: state[k] for k in _UPSTREAM_FIELDS if k in state}})


# Noted by an MCP tool call on its /mcp request: the route it ran in process is counted
# (its route, tenant and status), and the /mcp request not again.
COUNTED_INSIDE = "counted_inside"
_UPSTREAM_FIELDS = ("upstream", "upstream_status", "upstream_request_id", "model")


def _served(scope: Scope) -> bool:
    """Whether a route takes this method at this path: a body is checked only for one
    (a PUT on /healthz is the router's 405, whatever its body)."""
    routes: Any = getattr(scope.get("app"), "routes", None)
    if routes is None:  # no router to ask (BodyLimit on its own): check every body
        return True
    return any(candidate.matches(scope)[0] is Match.FULL for candidate in routes)


def _route(scope: Scope) -> str:
    """The route template that will serve the request, for a label with bounded values:
    the router's choice (the first full match, else the first path match with another
    method, a 405), made ahead of it."""
    app: Any = scope.get("app")
    partial: str | None = None
    for candidate in getattr(app, "routes", ()):
        path = getattr(candidate, "path", None)
        if not isinstance(path, str):
            continue
        match = candidate.matches(scope)[0]
        if match is Match.FULL:
            return path
        if match is Match.PARTIAL and partial is None:
            partial = path
    return partial or "unmatched"
