"""Streamed answers with the expand tool: events whole however the bytes are cut, the
tool's deltas taken out, the finish held until the round is decided."""

import json

from hypothesis import given
from hypothesis import strategies as st

from app.service.expand_stream import ChatRound, GeminiRound
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


def _decoded(raw: bytes, cuts: list[int]) -> list[Event]:
    """The events of ``raw`` fed to a decoder in pieces of the sizes ``cuts`` gives."""
    decoder, events, at = EventDecoder(), [], 0
    for size in cuts:
        events += decoder.feed(raw[at:at + size])
        at += size
    return events + decoder.feed(raw[at:]) + decoder.end()


@given(st.lists(st.integers(1, 40), max_size=30), st.sampled_from(["\n", "\r\n", "\r"]))
def test_a_round_reads_the_same_however_the_bytes_are_cut_and_lines_end(cuts, eol):
    events = _decoded(b"".join(STREAM).replace(b"\n", eol.encode()), cuts)
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


def _gemini_chunk(*parts, finish=None) -> bytes:
    candidate = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    chunk = {"candidates": [{**candidate, "finishReason": finish} if finish else candidate],
             "modelVersion": "gemini-2.5-pro", "responseId": "r1"}
    if finish:
        chunk["usageMetadata"] = {"promptTokenCount": 900, "candidatesTokenCount": 20,
                                  "totalTokenCount": 920}
    return f"data: {json.dumps(chunk)}\n\n".encode()


GEMINI_CALL = {"functionCall": {"id": "gc_7", "name": NAME, "args": {"handle": "cs_1"}},
               "thoughtSignature": "c2lnLTc="}
# Thinking, text in pieces, the tool's call mid-stream, then a last chunk whose empty
# text carries the signature of the answer's text (as Gemini streams one).
GEMINI_STREAM = [_gemini_chunk({"text": "The notes cut it.", "thought": True}),
                 _gemini_chunk({"text": "Let me "}), _gemini_chunk({"text": "check. "}),
                 _gemini_chunk(GEMINI_CALL),
                 _gemini_chunk({"text": "", "thoughtSignature": "c2lnLWVuZA=="},
                               finish="STOP")]


def _parts_of(passed: list[bytes]) -> list[dict]:
    return [p for e in passed for p in json.loads(e.split(b"data: ", 1)[1])
            ["candidates"][0]["content"]["parts"]]


@given(st.lists(st.integers(1, 60), max_size=30))
def test_a_gemini_round_hides_the_call_however_the_bytes_are_cut(cuts):
    # Gemini ends its lines with CRLF.
    events = _decoded(b"".join(GEMINI_STREAM).replace(b"\n", b"\r\n"), cuts)
    round_ = GeminiRound()
    passed = [e for e in map(round_.pass_on, events) if e is not None]
    assert NAME not in b"".join(passed).decode()
    # The text as it came, and the last chunk's signed empty text (the client keeps it).
    assert [p.get("text") for p in _parts_of(passed)] == ["The notes cut it.", "Let me ",
                                                          "check. ", ""]
    assert round_.calls() == [ExpandCall("gc_7", {"handle": "cs_1"})] and round_.others == 0
    [held] = round_.ending()  # the finish, held until the round is decided
    assert json.loads(held.split(b"data: ", 1)[1])["candidates"][0]["finishReason"] == "STOP"


def test_a_gemini_round_sends_back_what_the_model_said_with_its_signatures():
    round_ = GeminiRound()
    for event in GEMINI_STREAM:
        round_.pass_on(_read(event))
    body = {"contents": [{"role": "user", "parts": [{"text": "fix it"}]}]}
    sent = round_.follow(body, [(ExpandCall("gc_7", {"handle": "cs_1"}), "1: [")])
    said, replies = sent["contents"][1:]
    # The text's pieces joined; the call and the signed empty text as they came.
    assert said == {"role": "model", "parts": [
        {"text": "The notes cut it.", "thought": True}, {"text": "Let me check. "},
        GEMINI_CALL, {"text": "", "thoughtSignature": "c2lnLWVuZA=="}]}
    assert replies["parts"] == [{"functionResponse": {
        "name": NAME, "id": "gc_7", "response": {"output": "1: ["}}}]
    assert isinstance(round_.next(), GeminiRound)


def test_a_gemini_finish_that_brings_the_call_lets_its_text_out_first():
    round_ = GeminiRound()
    first = round_.pass_on(_read(_gemini_chunk({"text": "Checking."})))
    last = round_.pass_on(_read(_gemini_chunk({"text": " One moment."}, GEMINI_CALL,
                                              finish="STOP")))
    assert first is not None and last is not None
    shown = json.loads(last.split(b"data: ", 1)[1])
    # Its text goes out now (the next round's answer follows it), without the finish.
    assert shown["candidates"][0]["content"]["parts"] == [{"text": " One moment."}]
    assert "finishReason" not in shown["candidates"][0] and "usageMetadata" not in shown
    [held] = round_.ending()
    finish = json.loads(held.split(b"data: ", 1)[1])
    assert finish["candidates"][0]["content"]["parts"] == []
    assert finish["candidates"][0]["finishReason"] == "STOP" and finish["usageMetadata"]


def test_a_gemini_round_with_the_clients_calls_keeps_them_and_their_signature():
    theirs = {"functionCall": {"id": "gc_8", "name": "read_file", "args": {"file_path": "a"}}}
    round_ = GeminiRound()
    passed = [round_.pass_on(_read(e)) for e in (
        _gemini_chunk(GEMINI_CALL), _gemini_chunk(theirs, finish="STOP"))]
    assert passed[0] is None  # a chunk with only the tool's call is not sent
    assert round_.others == 1
    parts = _parts_of([e for e in passed if e] + round_.ending())
    assert parts == [{**theirs, "thoughtSignature": GEMINI_CALL["thoughtSignature"]}]


def test_a_gemini_answer_without_the_tool_goes_out_byte_for_byte():
    stream = [_gemini_chunk({"text": "Done"}), _gemini_chunk({"text": "."}, finish="STOP")]
    round_ = GeminiRound()
    passed = [e for e in (round_.pass_on(_read(e)) for e in stream) if e is not None]
    assert passed + round_.ending() == stream and round_.calls() == []
