"""An upstream answer's body, read whole or left midway, through the in-memory transport:
the slot goes back either way, and the transport learns which (``Upstream`` drops a
connection whose answer was left, and reuses one read to its end)."""

from __future__ import annotations

import pytest

from app.adapters.upstream import Slots
from app.adapters.upstream_memory import MemoryUpstream, UpstreamReply
from app.engine.errors import UpstreamBusy

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
