"""Every format in and out of /synthesize, under its own keys."""

import json

import pytest

from tests.support.corpus import load_named
from tests.support.wire import CASES

pytestmark = pytest.mark.anyio
KEYS = {"messages", "system", "contents", "systemInstruction", "system_instruction", "input",
        "instructions"}


@pytest.mark.parametrize("case", sorted(CASES))
async def test_format_round_trip_over_http(client, case):
    name, convert, check = CASES[case]
    payload = convert(load_named("minisweagent-ds-chat-test-1-100-django__django-11099"))
    r = await client.post("/synthesize", json={**payload, "model": "claude-3-5-haiku"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["format"] == name and body["compacted"]
    assert KEYS & set(body) == set(payload), "the conversation comes back under its own keys"
    check(payload, {k: body[k] for k in payload})
    conversation = next(k for k in ("messages", "contents", "input") if k in payload)
    assert body["stats"]["messages_before"] == len(payload[conversation])
    assert body["stats"]["messages_after"] == len(body[conversation])
    assert body["signals"]["task"].startswith("<pr_description>")


async def test_unchanged_gemini_comes_back_as_sent(client):
    payload = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}],
               "systemInstruction": {"parts": [{"text": "s"}]}}
    body = (await client.post("/synthesize", json={**payload, "steer": False})).json()
    assert not body["compacted"]
    assert {k: body[k] for k in payload} == payload


@pytest.mark.parametrize("case", sorted(CASES))
async def test_an_uncompacted_conversation_comes_back_as_sent_with_its_nudge_beside(client,
                                                                                   case):
    name, convert, check = CASES[case]
    payload = convert([{"role": "user", "content": "Book me a flight to Austin."}])
    # One plain user message reads as OpenAI too: name the format.
    body = (await client.post("/synthesize", json={**payload, "format": name})).json()
    assert not body["compacted"] and body["nudge"].startswith("[contextsynth] Phase: orient")
    out = {k: body[k] for k in payload}
    check(payload, out)
    # Never larger than what was sent: the nudge is in the response, not in the messages.
    assert out == payload and body["nudge"] not in json.dumps(out)


async def test_gemini_system_instruction_in_snake_case_round_trips(client):
    contents = [{"role": "user", "parts": [{"text": "hi"}]}]
    system = {"parts": [{"text": "Answer in French."}]}
    r = await client.post("/synthesize", json={"contents": contents,
                                               "system_instruction": system})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["format"] == "gemini"
    assert body["system_instruction"] == system and "systemInstruction" not in body


@pytest.mark.parametrize(("body", "needle"), [
    ({"contents": [{"role": "user", "parts": [{"text": "a"}]}],
      "systemInstruction": {"parts": [{"text": "s"}]},
      "system_instruction": {"parts": [{"text": "s"}]}}, "system instruction once"),
    ({"messages": [{"role": "user", "content": "a"}],
      "contents": [{"role": "user", "parts": [{"text": "a"}]}]}, "got messages, contents"),
    ({"tier": "mid"}, "got none"),
    ({"input": []}, "'input' is empty"),
])
async def test_exactly_one_conversation(client, body, needle):
    r = await client.post("/synthesize", json=body)
    assert r.status_code == 422
    assert needle in r.json()["detail"]


async def test_gemini_named_but_sent_as_messages(client):
    r = await client.post("/synthesize", json={
        "format": "gemini", "messages": [{"role": "user", "content": "hi"}]})
    assert r.status_code == 422
    assert "'contents'" in r.json()["detail"]


async def test_format_list_in_errors_names_all_four(client):
    r = await client.post("/synthesize", json={"input": "hi", "format": "cohere"})
    assert "auto, openai, anthropic, gemini, responses" in r.json()["detail"]
