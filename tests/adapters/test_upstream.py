"""An upstream answer's body, read whole or left midway, through the in-memory transport:
the slot goes back either way, and the transport learns which (``Upstream`` drops a
connection whose answer was left, and reuses one read to its end). And ``Upstream``
over loopback: a connection the upstream closed under a request is tried once more."""

from __future__ import annotations

import asyncio
import logging

import pytest

from app.adapters.upstream import Slots, Upstream
from app.adapters.upstream_memory import MemoryUpstream, UpstreamReply
from app.engine.errors import UpstreamBusy, UpstreamFailed
from tests.support.redis_server import free_port

pytestmark = pytest.mark.anyio


async def test_an_answer_read_to_its_end_gives_its_slot_back():
    upstream = MemoryUpstream(lambda _: UpstreamReply(200, [("x-id", "1")], [b"a", b"b"]),
                              slots=Slots(1, 0, 0.1))
    answer = await upstream.send("openai", "http://up/v1/x", b"{}", [("authorization", "k")])
    assert (answer.status, answer.headers) == (200, [("x-id", "1")])
    assert await answer.read() == b"ab"
    assert (upstream.finished, upstream.left) == (1, 0)
    await upstream.send("openai", "http://up/v1/x", b"{}", [])  # the slot is free again


async def test_an_answer_left_midway_gives_its_slot_back_and_says_so():
    upstream = MemoryUpstream(lambda _: UpstreamReply(200, [], [b"a", b"b", b"c"]),
                              slots=Slots(1, 0, 0.1))
    answer = await upstream.send("openai", "http://up/v1/x", b"{}", [])
    chunks = answer.chunks()
    assert await anext(chunks) == b"a"
    with pytest.raises(UpstreamBusy):  # one slot, held by the stream being read
        await upstream.send("openai", "http://up/v1/x", b"{}", [])
    await chunks.aclose()  # the reader left
    assert (upstream.finished, upstream.left) == (0, 1)
    await upstream.send("openai", "http://up/v1/x", b"{}", [])


async def test_hop_by_hop_headers_of_an_answer_stay_behind():
    upstream = MemoryUpstream(lambda _: UpstreamReply(200, [("transfer-encoding", "chunked"),
                                                    ("retry-after", "3")], [b"{}"]))
    answer = await upstream.send("anthropic", "http://up/v1/messages", b"{}", [])
    assert answer.headers == [("retry-after", "3")]


class _ClosingServer:
    """A loopback HTTP/1.1 server that answers ``answers`` requests on each connection,
    then closes the connection on the next one without answering it, as a server whose
    keep-alive ran out closes an idle connection just as a request arrives on it."""

    def __init__(self, answers: int) -> None:
        self.answers = answers
        self.received = 0
        self.connections = 0
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> str:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/v1/chat/completions"

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        answered = 0
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                await reader.readexactly(length)
                self.received += 1
                if answered == self.answers:
                    break
                answered += 1
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                             b"content-length: 2\r\n\r\n{}")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


async def test_a_pooled_connection_closed_by_the_upstream_is_sent_again_on_a_fresh_one():
    upstream = Upstream(timeout_s=5.0)
    server = _ClosingServer(answers=1)
    try:
        async with server as url:
            first = await upstream.send("openai", url, b'{"n":1}', [])
            assert await first.read() == b"{}"  # its connection goes back to the pool
            second = await upstream.send("openai", url, b'{"n":2}', [])
            assert (second.status, await second.read()) == (200, b"{}")
        # The second request met the pooled connection closing, and went again on a new one.
        assert (server.received, server.connections) == (3, 2)
    finally:
        await upstream.aclose()


async def test_an_upstream_that_drops_every_request_is_tried_twice_then_reported():
    upstream = Upstream(timeout_s=5.0)
    server = _ClosingServer(answers=0)
    try:
        async with server as url:
            with pytest.raises(UpstreamFailed, match="could not be reached"):
                await upstream.send("openai", url, b"{}", [])
        assert server.received == 2  # once more, never a loop
    finally:
        await upstream.aclose()


async def test_an_upstream_that_refuses_connections_is_reported_at_once(caplog):
    upstream = Upstream(timeout_s=5.0)
    try:
        with caplog.at_level(logging.INFO, logger="app.adapters.upstream"), \
                pytest.raises(UpstreamFailed, match="ClientConnectorError"):
            await upstream.send("openai", f"http://127.0.0.1:{free_port()}/v1/x", b"{}", [])
        # A connect that failed is not a connection dropped under a request: not sent again.
        assert not [r for r in caplog.records if "sent again" in r.getMessage()]
    finally:
        await upstream.aclose()
