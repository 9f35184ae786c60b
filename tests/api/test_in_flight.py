"""contextsynth_requests_in_flight: up while a request runs, down once it is over, on
every way a request ends (an answer, a streamed answer's last chunk, an error, the
client leaving, cancellation)."""

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from app.adapters.metrics import Metrics
from app.api.middleware import RequestRecords
from tests.conftest import serve

pytestmark = pytest.mark.anyio


class Stage:
    """A tiny app behind RequestRecords whose handlers wait where the test says."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.entered = asyncio.Event()  # a handler is running
        self.release = asyncio.Event()  # let it finish
        self.app = Starlette(routes=[
            Route("/wait/{name}", self._wait), Route("/boom", self._boom),
            Route("/stream", self._stream)],
            middleware=[Middleware(RequestRecords, metrics=Metrics(self.registry))])

    async def _wait(self, request: Request) -> Response:
        self.entered.set()
        await self.release.wait()
        return PlainTextResponse("done")

    async def _boom(self, request: Request) -> Response:
        raise RuntimeError("a bug")

    async def _stream(self, request: Request) -> Response:
        async def chunks() -> AsyncIterator[bytes]:
            yield b"first"
            self.entered.set()
            await self.release.wait()
            yield b"last"
        return StreamingResponse(chunks())

    def in_flight(self, route: str) -> float | None:
        return self.registry.get_sample_value("contextsynth_requests_in_flight",
                                              {"route": route})

    def handled(self, route: str, status: str) -> float | None:
        return self.registry.get_sample_value("contextsynth_requests_total", {
            "route": route, "mode": "none", "status": status, "tenant": "none"})


def _scope(path: str) -> dict[str, Any]:
    # ASGI 2.3: a streamed answer listens for the client's disconnect itself.
    return {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1", "method": "GET", "scheme": "http", "path": path,
            "raw_path": path.encode(), "root_path": "", "query_string": b"", "headers": [],
            "server": ("test", 80), "client": ("127.0.0.1", 1)}


class Client:
    """One request driven by hand: what was sent back, and whether the client left."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.leave = asyncio.Event()
        self._asked = False

    async def receive(self) -> dict[str, Any]:
        if not self._asked:  # the (empty) body, then nothing until the client leaves
            self._asked = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await self.leave.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)

    def body(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.sent
                        if m["type"] == "http.response.body")


async def _start(stage: Stage, path: str, client: Client) -> asyncio.Task[None]:
    task = asyncio.create_task(stage.app(_scope(path), client.receive, client.send))
    await asyncio.wait_for(stage.entered.wait(), 5)
    return task


async def test_a_request_is_in_flight_until_it_is_answered():
    stage = Stage()
    first, second = Client(), Client()
    one = await _start(stage, "/wait/a", first)
    two = asyncio.create_task(stage.app(_scope("/wait/b"), second.receive, second.send))
    await asyncio.sleep(0.05)
    assert stage.in_flight("/wait/{name}") == 2  # by route template, not by path
    stage.release.set()
    await asyncio.gather(one, two)
    assert stage.in_flight("/wait/{name}") == 0
    assert stage.handled("/wait/{name}", "200") == 2


async def test_a_streamed_answer_is_in_flight_until_its_last_chunk():
    stage = Stage()
    client = Client()
    task = await _start(stage, "/stream", client)
    # Headers and the first chunk are out; the stream is not over.
    assert client.body() == b"first" and stage.in_flight("/stream") == 1
    stage.release.set()
    await task
    assert client.body() == b"firstlast" and stage.in_flight("/stream") == 0


async def test_a_stream_whose_client_leaves_is_no_longer_in_flight():
    stage = Stage()
    client = Client()
    task = await _start(stage, "/stream", client)
    assert stage.in_flight("/stream") == 1
    client.leave.set()  # the stream never gets its release
    await asyncio.wait_for(task, 5)
    assert client.body() == b"first" and stage.in_flight("/stream") == 0


async def test_an_error_is_counted_and_leaves_nothing_in_flight():
    stage = Stage()
    client = Client()
    with pytest.raises(RuntimeError):  # the server error middleware answers, then raises
        await stage.app(_scope("/boom"), client.receive, client.send)
    assert client.sent[0]["status"] == 500
    assert stage.in_flight("/boom") == 0 and stage.handled("/boom", "500") == 1


async def test_a_cancelled_request_leaves_nothing_in_flight():
    stage = Stage()
    task = await _start(stage, "/wait/a", Client())
    assert stage.in_flight("/wait/{name}") == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert stage.in_flight("/wait/{name}") == 0


async def test_the_app_counts_a_scrape_in_flight_while_it_runs(make_app):
    async with serve(make_app()) as c:
        await c.get("/healthz")
        text = (await c.get("/metrics")).text
        after = (await c.get("/metrics")).text
    # The scrape that wrote the page was running; the health check was over.
    assert 'contextsynth_requests_in_flight{route="/metrics"} 1.0' in text
    assert 'contextsynth_requests_in_flight{route="/healthz"} 0.0' in text
    assert 'contextsynth_requests_total{mode="none",route="/metrics",status="200",' \
        'tenant="none"} 1.0' in after
