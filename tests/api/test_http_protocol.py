"""The header bound over uvicorn's httptools protocol, driven in process through a fake
transport: what it relies on of uvicorn's non-public protocol class (the asyncio
protocol methods, ``cycle`` set once a request's headers are complete,
``on_response_complete``) is exercised here, so an uvicorn release that changes it
fails these tests. ``tests/cli/test_cli.py`` runs the same bound over a real socket."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from uvicorn.config import Config
from uvicorn.server import ServerState

from app.api import http_protocol
from app.api.http_protocol import BoundedHttpToolsProtocol, bound_headers

pytestmark = pytest.mark.anyio

_BOUND_S = 0.05


class _Transport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written = b""
        self.closed = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 50000), "sockname": ("127.0.0.1", 8080)}.get(
            name, default)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += bytes(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


async def _ok(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})


@pytest.fixture(autouse=True)
def bounded() -> Iterator[None]:
    before = http_protocol._HeaderBound.header_timeout_s
    bound_headers(_BOUND_S)
    yield
    bound_headers(before)


def _connected() -> tuple[BoundedHttpToolsProtocol, _Transport]:
    config = Config(app=_ok, lifespan="off", log_level="warning")
    protocol = BoundedHttpToolsProtocol(config, ServerState(), {},
                                        _loop=asyncio.get_running_loop())
    transport = _Transport()
    protocol.connection_made(transport)
    return protocol, transport


async def test_a_request_whose_headers_trickle_is_cut_off():
    protocol, transport = _connected()
    protocol.data_received(b"POST /synthesize HTTP/1.1\r\nHost: x\r\n")
    await asyncio.sleep(_BOUND_S / 2)
    protocol.data_received(b"X-Slow: 1\r\n")  # more bytes do not buy more time
    assert not transport.closed
    await asyncio.sleep(_BOUND_S)
    assert transport.closed and transport.written == b""


async def test_a_request_whose_headers_come_in_time_is_served_and_the_bound_starts_again():
    protocol, transport = _connected()
    protocol.data_received(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    for _ in range(100):  # the app's task answers on the loop
        if transport.written:
            break
        await asyncio.sleep(0.001)
    assert transport.written.startswith(b"HTTP/1.1 200 OK") and transport.written.endswith(b"ok")
    assert not transport.closed  # kept alive for the next request
    # The next request's headers are bound from the end of this response.
    await asyncio.sleep(_BOUND_S * 2)
    assert transport.closed
    protocol.connection_lost(None)


async def test_the_bound_is_what_the_factory_set():
    bound_headers(30.0)
    protocol, transport = _connected()
    protocol.data_received(b"POST /synthesize HTTP/1.1\r\n")
    await asyncio.sleep(_BOUND_S * 2)
    assert not transport.closed
    protocol.connection_lost(None)
