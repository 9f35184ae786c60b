"""Gemini and OpenAI Responses: round trips, call matching, detection."""

import copy
import json

import pytest

from app.engine.compaction.tiers import Tier
from app.engine.errors import AmbiguousFormat, InvalidTranscript
from app.engine.jobs.synthesize.modes import Mode
from app.engine.jobs.synthesize.synthesizer import SynthesisOptions
from app.engine.transcript.formats import resolve_format
from tests.support.build import coding_run
from tests.support.convert import to_gemini, to_responses
from tests.support.invariants import check_gemini, check_responses

GEMINI = {
    "systemInstruction": {"role": "system", "parts": [{"text": "be brief"}]},
    "contents": [
        {"role": "user", "parts": [{"text": "weather in Paris and Rome?"}]},
        {"role": "model", "parts": [
            {"text": "Checking.", "thought": True},
            {"functionCall": {"name": "weather", "args": {"city": "Paris"}},
             "thoughtSignature": "c2ln"},
            {"functionCall": {"name": "weather", "args": {"city": "Rome"}}},
        ]},
        {"role": "user", "parts": [
            {"functionResponse": {"name": "weather", "response": {"output": "sunny"}}},
            {"functionResponse": {"name": "weather", "response": {"temp": 31, "sky": "clear"}}},
        ], "x_extra": 1},
    ],
}

RESPONSES = {
    "instructions": "be brief",
    "input": [
        {"role": "user", "content": "weather in Paris?"},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"},
        {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "weather",
         "arguments": "{\"city\": \"Paris\"}", "status": "completed"},
        {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
        {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
         "content": [{"type": "output_text", "text": "Sunny.", "annotations": []}]},
        {"type": "web_search_call", "id": "ws_1", "status": "completed"},
        {"type": "message", "role": "user",
         "content": [{"type": "input_text", "text": "thanks"}]},
    ],
}


def test_gemini_round_trip_keeps_everything(formats):
    wire = formats["gemini"]
    transcript = wire.parse(copy.deepcopy(GEMINI))
    assert [m.role for m in transcript.messages] == ["system", "user", "assistant", "tool",
                                                     "tool"]
    assert [m.text for m in transcript.messages[3:]] == ["sunny",
                                                        '{"temp": 31, "sky": "clear"}']
    assert wire.render(transcript) == GEMINI


def test_gemini_matches_responses_by_order_and_name(formats):
    transcript = formats["gemini"].parse(GEMINI)
    calls = transcript.messages[2].tool_calls
    assert [m.tool_call_id for m in transcript.messages[3:]] == [calls[0].id, calls[1].id]


def test_gemini_ids_win_over_order(formats):
    payload = copy.deepcopy(GEMINI)
    model, user = payload["contents"][1]["parts"], payload["contents"][2]["parts"]
    model[1]["functionCall"]["id"], model[2]["functionCall"]["id"] = "a", "b"
    user[0]["functionResponse"]["id"], user[1]["functionResponse"]["id"] = "b", "a"
    transcript = formats["gemini"].parse(payload)
    assert [m.tool_call_id for m in transcript.messages[3:]] == ["b", "a"]


def test_gemini_response_without_a_call_is_named(formats):
    payload = copy.deepcopy(GEMINI)
    payload["contents"][2]["parts"][1]["functionResponse"]["name"] = "forecast"
    with pytest.raises(InvalidTranscript) as err:
        formats["gemini"].parse(payload)
    assert "contents.2.parts.1" in err.value.detail and "'forecast'" in err.value.detail


def test_gemini_rejects_openai_roles(formats):
    with pytest.raises(InvalidTranscript, match="'assistant'"):
        formats["gemini"].parse({"contents": [{"role": "assistant", "parts": [{"text": "x"}]}]})


def test_responses_round_trip_keeps_everything(formats):
    wire = formats["responses"]
    transcript = wire.parse(copy.deepcopy(RESPONSES))
    roles = [m.role for m in transcript.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert [p.kind for p in transcript.messages[2].parts] == ["reasoning", "function_call"]
    assert wire.render(transcript) == RESPONSES


def test_responses_string_input(formats):
    transcript = formats["responses"].parse({"input": "hello"})
    assert [(m.role, m.text) for m in transcript.messages] == [("user", "hello")]


def test_responses_reasoning_goes_with_its_call(synthesizer, formats):
    payload = to_responses(coding_run(8))
    wire = formats["responses"]
    result = synthesizer.run(wire.parse(payload), SynthesisOptions(tier=Tier.LOCAL))
    out = wire.render(result.transcript)
    check_responses(payload, out)
    kept_calls = {i["call_id"] for i in out["input"] if i.get("type") == "function_call"}
    kept_reasoning = {i["id"] for i in out["input"] if i.get("type") == "reasoning"}
    assert kept_reasoning == {f"rs_{n}" for n in range(2, 18, 2)
                              if f"call_{(n - 2) // 2}" in kept_calls}


def test_gemini_masking_keeps_the_response_shape(synthesizer, formats):
    payload = to_gemini(coding_run(8))
    wire = formats["gemini"]
    result = synthesizer.run(wire.parse(payload), SynthesisOptions(
        mode=Mode.CUSTOM, strategy="observation-mask", tier=Tier.LOCAL))
    out = wire.render(result.transcript)
    check_gemini(payload, out)
    responses = [p["functionResponse"]["response"] for c in out["contents"] for p in c["parts"]
                 if "functionResponse" in p]
    assert all(set(r) == {"output"} for r in responses)
    assert "omitted" in responses[0]["output"]


@pytest.mark.parametrize(("payload", "expected"), [
    ({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}]},
     "openai"),
    ({"system": "s", "messages": [{"role": "user", "content": "hi"}]}, "anthropic"),
    ({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}, "gemini"),
    ({"input": "hi"}, "responses"),
    ({"input": [{"role": "user", "content": "hi"}]}, "responses"),
])
def test_each_format_is_recognised_from_a_minimal_payload(formats, payload, expected):
    assert resolve_format(formats, "auto", payload).name == expected


@pytest.mark.parametrize(("payload", "names"), [
    ({"messages": [{"role": "user", "content": "hi"}],
      "contents": [{"role": "user", "parts": [{"text": "hi"}]}]}, ("openai", "gemini")),
    ({"messages": [{"role": "tool", "tool_call_id": "x", "content": "1"},
                   {"type": "function_call_output", "call_id": "x", "output": "1"}]},
     ("openai", "responses")),
    ({"messages": [{"role": "system", "content": "s"}, {"role": "user", "parts": [{"text": "h"}]}]},
     ("openai", "gemini")),
])
def test_mixed_payloads_name_the_shapes(formats, payload, names):
    with pytest.raises(AmbiguousFormat) as err:
        resolve_format(formats, "auto", payload)
    for name in names:
        assert name in err.value.detail


def test_gemini_items_sent_as_messages_get_a_clear_message(formats):
    payload = {"messages": [{"role": "user", "parts": [{"text": "hi"}]}]}
    wire = resolve_format(formats, "auto", payload)
    with pytest.raises(InvalidTranscript, match="'contents'"):
        wire.parse(payload)


# Codex's free-form apply_patch: a custom tool's call carries its text in 'input'.
PATCH = "*** Begin Patch\n*** Update File: src/a.py\n@@\n-x = 1\n+x = 2\n*** End Patch\n"
CUSTOM = {"input": [
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix a"}]},
    {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_1", "name": "apply_patch",
     "input": PATCH, "status": "completed"},
    {"type": "custom_tool_call_output", "call_id": "call_1", "output": "Success. M src/a.py"},
    {"type": "message", "role": "assistant", "content": [
        {"type": "output_text", "text": "Done."}]},
]}


def test_responses_custom_tool_calls_are_calls_and_their_outputs_results(formats):
    wire = formats["responses"]
    transcript = wire.parse(copy.deepcopy(CUSTOM))
    assert [m.role for m in transcript.messages] == ["user", "assistant", "tool", "assistant"]
    call = transcript.messages[1].tool_calls[0]
    assert (call.id, call.name, json.loads(call.arguments)) == (
        "call_1", "apply_patch", {"input": PATCH})
    assert transcript.messages[2].tool_call_id == "call_1"
    assert wire.render(transcript) == CUSTOM


def test_a_custom_calls_cut_arguments_go_back_as_its_input(formats):
    from dataclasses import replace

    wire = formats["responses"]
    transcript = wire.parse(copy.deepcopy(CUSTOM))
    assistant = transcript.messages[1]
    cut = replace(assistant, tool_calls=(
        replace(assistant.tool_calls[0], arguments=json.dumps({"input": "*** Begin Patch"})),))
    out = wire.render(replace(transcript, messages=(
        transcript.messages[0], cut, *transcript.messages[2:])))
    assert out["input"][1] == {**CUSTOM["input"][1], "input": "*** Begin Patch"}
