"""Streamed answers with the expand tool: events whole however the bytes are cut, the
tool's deltas taken out, the finish held until the round is decided."""

import json

from hypothesis import given
from hypothesis import strategies as st

from app.service.expand_stream import ChatRound
from app.service.expand_tool import NAME, ExpandCall
from app.service.sse import Event, EventDecoder


def _event(delta, finish=None) -> bytes:
    chunk = {"id": "c", "object": "chat.completion.chunk",
             "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(chunk)}\n\n".encode()


STREAM = [_event({"role": "assistant", "content": ""}), _event({"content": "Checking. "}),
          _event({"tool_calls": [{"index": 0, "id": "x", "type": "function",
                                  "function": {"name": NAME, "arguments": '{"handle": '}}]}),
          _event({"tool_calls": [{"index": 1, "id": "y", "type": "function",
                                  "function": {"name": "book", "arguments": "{}"}}]}),
          _event({"tool_calls": [{"index": 0, "function": {"arguments": '"cs_1"}'}}]}),
          _event({}, "tool_calls"), b"data: [DONE]\n\n"]


def _read(raw: bytes) -> Event:
    [event] = EventDecoder().feed(raw)
    return event


@given(st.lists(st.integers(1, 40), max_size=30), st.sampled_from(["\n", "\r\n", "\r"]))
def test_a_round_reads_the_same_however_the_bytes_are_cut_and_lines_end(cuts, eol):
    raw = b"".join(STREAM).replace(b"\n", eol.encode())
    decoder, events, at = EventDecoder(), [], 0
    for size in cuts:
        events += decoder.feed(raw[at:at + size])
        at += size
    events += decoder.feed(raw[at:]) + decoder.end()
    round_ = ChatRound()
    passed = [e for e in map(round_.pass_on, events) if e is not None]
    assert round_.calls() == [ExpandCall("x", {"handle": "cs_1"})]
    assert b"Checking." in b"".join(passed) and round_.ending() == STREAM[-2:]


def test_the_tools_deltas_go_and_the_clients_stay():
    round_ = ChatRound()
    passed = [e for e in (round_.pass_on(_read(e)) for e in STREAM) if e is not None]
    text = b"".join(passed).decode()
    assert NAME not in text and '"book"' in text and "Checking." in text
    assert round_.calls() == [ExpandCall("x", {"handle": "cs_1"})] and round_.others == 1
    # With a call of the client's, the answer ends here as the model gave it.
    assert round_.ending() == STREAM[-2:]


def test_a_finish_on_the_tools_calls_alone_ends_as_a_stop():
    round_ = ChatRound()
    for event in [STREAM[0], STREAM[2], STREAM[4], STREAM[5], STREAM[6]]:
        assert round_.pass_on(_read(event)) is None or event is STREAM[0]
    assert round_.message()["tool_calls"][0]["function"]["arguments"] == '{"handle": "cs_1"}'
    ending = round_.ending()
    assert json.loads(ending[0][6:])["choices"][0]["finish_reason"] == "stop"
    assert ending[1] == b"data: [DONE]\n\n"


def _named(kind, **payload) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **payload})}\n\n".encode()


def test_a_messages_round_hides_the_tools_block_and_numbers_the_rest_on():
    from app.service.expand_stream import MessagesRound

    first = MessagesRound()
    events = [_named("message_start", message={"id": "m"}),
              _named("content_block_start", index=0, content_block={
                  "type": "tool_use", "id": "t", "name": NAME, "input": {}}),
              _named("content_block_delta", index=0, delta={
                  "type": "input_json_delta", "partial_json": '{"handle": "cs_1"}'}),
              _named("content_block_stop", index=0),
              _named("content_block_start", index=1, content_block={"type": "text",
                                                                     "text": ""}),
              _named("content_block_delta", index=1, delta={"type": "text_delta",
                                                            "text": "Hm."}),
              _named("content_block_stop", index=1),
              _named("message_delta", delta={"stop_reason": "tool_use"}),
              _named("message_stop")]
    passed = [json.loads(e.split(b"data: ")[1])
              for e in map(first.pass_on, map(_read, events)) if e]
    assert [(p["type"], p.get("index")) for p in passed] == [
        ("message_start", None), ("content_block_start", 0), ("content_block_delta", 0),
        ("content_block_stop", 0)]
    assert first.calls() == [ExpandCall("t", {"handle": "cs_1"})]
    second = first.next()
    assert second.pass_on(_read(events[0])) is None  # one message_start per answer
    moved = json.loads(second.pass_on(_read(events[4])).split(b"data: ")[1])
    assert moved["index"] == 1  # after the block the client already has
    ending = first.ending()
    assert json.loads(ending[0].split(b"data: ")[1])["delta"]["stop_reason"] == "end_turn"
