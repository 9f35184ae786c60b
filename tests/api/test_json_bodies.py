"""Bodies are read by orjson, except what it would not keep as sent: those are read by
the standard parser, and come back exactly as they came."""

from __future__ import annotations

import json

import orjson
import pytest

from app.adapters.jsoncodec import Unread, loads_fast
from app.adapters.resends import MIN_BYTES, Resends
from app.corpus import load, transcript_files
from app.engine.errors import NestedTooDeep
from app.evaluation.replay import sample_steps
from tests.conftest import serve

pytestmark = pytest.mark.anyio

JSON = {"content-type": "application/json"}
BIG = 123456789012345678901234567890  # past 64 bits: orjson would make it a float


def _anthropic(tool_input: dict[str, object], result: str) -> dict[str, object]:
    return {"system": "You manage orders.", "messages": [
        {"role": "user", "content": "Cancel order 7."},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "cancel", "input": tool_input}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": result}]}],
        "reasoning": {"synthesis": "off"}, "steer": False}


async def test_an_integer_past_64_bits_comes_back_exact(client):
    body = json.dumps(_anthropic({"order": BIG}, "cancelled")).encode()
    assert isinstance(loads_fast(body), Unread)  # orjson would have made it a float
    r = await client.post("/synthesize", content=body,
                          headers={"content-type": "application/json"})
    assert r.status_code == 200, r.text
    assert f'"order":{BIG}' in r.text.replace(" ", "")
    assert r.json()["messages"][1]["content"][0]["input"]["order"] == BIG


async def test_a_lone_surrogate_in_text_is_read_and_sent_back(client):
    body = json.dumps(_anthropic({"order": 7}, "done \ud83d")).encode()  # escaped: \\ud83d
    r = await client.post("/synthesize", content=body,
                          headers={"content-type": "application/json"})
    assert r.status_code == 200, r.text
    assert r.json()["messages"][2]["content"][0]["content"] == "done \ud83d"


async def test_bodies_orjson_reads_are_the_same_as_the_standard_parsers():
    body = json.dumps(_anthropic({"order": 7, "price": 12.5, "note": "é ✓"}, "ok")).encode()
    assert loads_fast(body) == json.loads(body)


async def test_a_long_number_inside_a_string_keeps_the_fast_path():
    body = json.dumps(_anthropic({"order": 7}, f"hash {BIG} ok")).encode()
    assert loads_fast(body) == json.loads(body)  # read by orjson: no number was changed
    beside_a_float = json.dumps(_anthropic({"order": BIG, "price": 12.5}, "ok")).encode()
    assert isinstance(loads_fast(beside_a_float), Unread)


async def test_an_agent_loop_is_answered_as_each_body_alone_would_be(make_app):
    """Bodies that resend the last one's messages are parsed only past them (see
    ``adapters.resends``); every answer is the one a service that never saw the earlier
    bodies gives."""
    messages = load(transcript_files(None)[0])
    steps = sample_steps(messages, None)[-6:]  # before each of the last assistant steps
    async with serve(make_app()) as loop:
        for k in steps:
            body = orjson.dumps({"messages": messages[:k], "tier": "mid"})
            assert len(body) > MIN_BYTES
            answer = await loop.post("/synthesize", content=body,
                                     headers={"content-type": "application/json"})
            async with serve(make_app()) as fresh:
                alone = await fresh.post("/synthesize", content=body,
                                         headers={"content-type": "application/json"})
            assert answer.status_code == alone.status_code == 200, answer.text
            assert answer.json()["messages"] == alone.json()["messages"]
            assert answer.json()["receipt"] == alone.json()["receipt"]


async def test_nesting_is_measured_against_the_setting_and_named(make_app):
    metadata = '{"a":' * 40 + "1" + "}" * 40
    body = ('{"messages":[{"role":"user","content":"hi"}],"metadata":' + metadata
            + "}").encode()
    async with serve(make_app()) as c:  # 64 levels by default: 42 are read
        assert (await c.post("/synthesize", content=body, headers=JSON)).status_code != 400
    async with serve(make_app(max_json_depth=32)) as c:
        r = await c.post("/synthesize", content=body, headers=JSON)
        assert r.status_code == 400
        assert r.json()["type"].endswith("nested-too-deep")
        assert "32 levels" in r.json()["detail"]
        assert "CONTEXTSYNTH_MAX_JSON_DEPTH" in r.json()["detail"]


async def test_invalid_utf8_names_the_byte(client):
    body = b'{"messages":[{"role":"user","content":"ok \xff"}]}'
    r = await client.post("/synthesize", content=body, headers=JSON)
    assert r.status_code == 400 and r.json()["type"].endswith("invalid-utf8")
    at = body.index(b"\xff")
    assert f"byte {at} " in r.json()["detail"] and "0xff" in r.json()["detail"]


async def test_an_integer_too_long_to_convert_is_named_at_its_place(client):
    body = b'{"messages":[{"role":"user","content":"hi"}],"metadata":{"n":' + b"7" * 4301 + b"}}"
    r = await client.post("/synthesize", content=body, headers=JSON)
    assert r.status_code == 422 and r.json()["pointer"] == "/metadata/n"
    assert "4301 digits" in r.json()["detail"] and "as a string" in r.json()["detail"]


def test_a_resent_body_is_measured_for_depth_where_it_is_new():
    messages = [{"role": "user", "content": "x" * MIN_BYTES}]
    deep = {"role": "tool", "tool_call_id": "c", "content": [{"a": [[[[[[[[1]]]]]]]]}]}
    bodies = Resends(max_depth=8)
    first = orjson.dumps({"messages": messages})
    assert bodies.loads(first)["messages"] == messages
    with pytest.raises(NestedTooDeep):
        bodies.loads(orjson.dumps({"messages": [*messages, deep]}))
    shallow = {"role": "tool", "tool_call_id": "c", "content": "[[[[[[[[[[1]]]]]]]]]]"}
    assert bodies.loads(orjson.dumps({"messages": [*messages, shallow]}))["messages"][1] \
        == shallow
