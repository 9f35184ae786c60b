"""The expand tool's shapes and what it reads back: pure functions over provider JSON."""

import json

import pytest

from app.service.expand_tool import NAME, SHAPES, ExpandCall, may_offer, read_back

DOCUMENT = {"format": "openai", "messages": [
    {"role": "tool", "tool_call_id": "c1", "content": "\n".join(
        f"line {n}: worker {n % 5} {'ERROR timeout' if n % 40 == 0 else 'ok'}"
        for n in range(1, 400))}]}


def test_a_long_span_is_cut_with_the_way_to_the_rest():
    text = read_back(DOCUMENT, {"handle": "cs_1"}, 1_000)
    assert len(text) < 1_200 and text.startswith("1: [")
    assert text.rstrip().endswith("or `search`]")


def test_lines_and_search_narrow_what_comes_back():
    ranged = read_back(DOCUMENT, {"handle": "cs_1", "lines": "2-4"}, 20_000)
    assert [line.split(":")[0] for line in ranged.splitlines()] == ["2", "3", "4"]
    # The document is one line of JSON per field: a search finds the content's line.
    found = read_back(DOCUMENT, {"handle": "cs_1", "search": "tool_call_id"}, 20_000)
    assert found.count("\n") == 0 and '"c1"' in found
    assert "no line" in read_back(DOCUMENT, {"handle": "cs_1", "search": "nowhere"}, 20_000)
    assert "range" in read_back(DOCUMENT, {"handle": "cs_1", "lines": "a-b"}, 20_000)


def test_each_shape_takes_its_own_calls_out_and_leaves_the_clients():
    chat = {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": NAME,
                                                         "arguments": '{"handle": "cs_1"}'}},
            {"id": "b", "type": "function", "function": {"name": "book", "arguments": "{}"}},
        ]}}]}
    shape = SHAPES["openai"]
    assert shape.calls(chat) == ([ExpandCall("a", {"handle": "cs_1"})], 1)
    kept = shape.without_tool(chat)["choices"][0]
    assert [c["id"] for c in kept["message"]["tool_calls"]] == ["b"]
    assert kept["finish_reason"] == "tool_calls"
    only_ours = {"choices": [{**chat["choices"][0], "message": {
        **chat["choices"][0]["message"], "tool_calls": chat["choices"][0]["message"]
        ["tool_calls"][:1]}}]}
    cleared = shape.without_tool(only_ours)["choices"][0]
    assert "tool_calls" not in cleared["message"] and cleared["finish_reason"] == "stop"
    message = {"content": [{"type": "tool_use", "id": "t", "name": NAME, "input": {}}],
               "stop_reason": "tool_use"}
    assert SHAPES["anthropic"].without_tool(message) == {"content": [],
                                                         "stop_reason": "end_turn"}
    response = {"output": [{"type": "function_call", "call_id": "c", "name": NAME,
                            "arguments": "{}"}]}
    assert SHAPES["responses"].without_tool(response) == {"output": []}


def test_the_tool_is_not_offered_where_the_client_forces_its_own():
    messages = {"messages": [{"role": "user", "content": "hi"}]}
    assert may_offer("openai", messages)
    assert not may_offer("openai", {**messages, "tool_choice": "required"})
    assert not may_offer("openai", {**messages, "tool_choice": {
        "type": "function", "function": {"name": "book"}}})
    assert may_offer("openai", {**messages, "tool_choice": "auto"})
    assert not may_offer("anthropic", {**messages, "tool_choice": {"type": "any"}})
    assert not may_offer("responses", {"input": "a string, no list to append to"})
    offered = SHAPES["anthropic"].offer({**messages, "tools": [{"name": "book"}]})
    assert [t["name"] for t in offered["tools"]] == ["book", NAME]
    assert json.dumps(offered["tools"][1]["input_schema"]["required"]) == '["handle"]'


@pytest.mark.parametrize("key", ["messages", "input", "contents"])
def test_a_span_stored_in_any_callers_format_reads_back(key):
    # The span is stored in the format of the caller that dropped it last: a Responses
    # caller's under input, a Gemini caller's under contents.
    document = {"handle": "cs_1", "format": "x", key: [{"role": "user", "content": "hi"}]}
    text = read_back(document, {"handle": "cs_1"}, 10_000)
    assert '"role": "user"' in text and '"content": "hi"' in text


def _gemini(*parts, finish="STOP"):
    return {"candidates": [{"content": {"role": "model", "parts": list(parts)},
                            "finishReason": finish, "index": 0}],
            "usageMetadata": {"promptTokenCount": 900, "candidatesTokenCount": 20,
                              "totalTokenCount": 920}, "modelVersion": "gemini-2.5-pro"}


OURS = {"functionCall": {"id": "gc_1", "name": NAME, "args": {"handle": "cs_1"}},
        "thoughtSignature": "c2lnLW91cnM="}
THEIRS = {"functionCall": {"id": "gc_2", "name": "read_file", "args": {"file_path": "a"}}}


def test_gemini_declares_the_tool_beside_the_clients_functions():
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}],
            "tools": [{"functionDeclarations": [{"name": "read_file"}]}, {"googleSearch": {}}]}
    offered = SHAPES["gemini"].offer(body)
    names = [f["name"] for f in offered["tools"][0]["functionDeclarations"]]
    assert names == ["read_file", NAME] and offered["tools"][1] == {"googleSearch": {}}
    assert body["tools"][0]["functionDeclarations"] == [{"name": "read_file"}]  # a copy
    alone = SHAPES["gemini"].offer({"contents": body["contents"]})
    assert alone["tools"] == [{"functionDeclarations": [{
        "name": NAME, "description": alone["tools"][0]["functionDeclarations"][0]
        ["description"], "parameters": alone["tools"][0]["functionDeclarations"][0]
        ["parameters"]}]}]


def test_gemini_answers_the_call_after_the_models_content_as_it_came():
    shape = SHAPES["gemini"]
    answer = _gemini({"text": "Reading back.", "thought": True}, OURS)
    assert shape.calls(answer) == ([ExpandCall("gc_1", {"handle": "cs_1"})], 0)
    assert shape.tokens(answer) == 920
    body = {"contents": [{"role": "user", "parts": [{"text": "fix it"}]}]}
    sent = shape.next_round(body, answer, [(ExpandCall("gc_1", {"handle": "cs_1"}), "1: [")])
    said, replies = sent["contents"][1:]
    assert said == answer["candidates"][0]["content"]  # the signature where it came
    assert replies == {"role": "user", "parts": [{"functionResponse": {
        "name": NAME, "id": "gc_1", "response": {"output": "1: ["}}}]}
    # A call without an id (older payloads) is answered by its name alone.
    unnamed = shape.next_round(body, answer, [(ExpandCall("", {"handle": "cs_1"}), "x")])
    assert "id" not in unnamed["contents"][-1]["parts"][0]["functionResponse"]


def test_gemini_takes_its_call_out_and_keeps_the_clients_step_signed():
    shape = SHAPES["gemini"]
    answer = _gemini({"text": "Both."}, OURS, THEIRS)
    assert shape.calls(answer)[1] == 1
    parts = shape.without_tool(answer)["candidates"][0]["content"]["parts"]
    # Parallel calls carry the step's signature on the first only: with ours out, the
    # client's call is the first, and Gemini refuses it unsigned.
    assert parts == [{"text": "Both."}, {**THEIRS, "thoughtSignature": OURS["thoughtSignature"]}]
    assert answer["candidates"][0]["content"]["parts"][2] == THEIRS  # the answer as it was
    only_ours = shape.without_tool(_gemini({"text": "Hm."}, OURS))
    assert only_ours["candidates"][0]["content"]["parts"] == [{"text": "Hm."}]
    assert only_ours["candidates"][0]["finishReason"] == "STOP"


@pytest.mark.parametrize(("extra", "offered"), [
    ({}, True),
    ({"toolConfig": {"functionCallingConfig": {"mode": "AUTO"}}}, True),
    ({"toolConfig": {"functionCallingConfig": {"mode": "ANY"}}}, False),
    ({"tool_config": {"function_calling_config": {"mode": "any"}}}, False),
    # Gemini refuses functions beside a JSON answer (Gemini CLI's side checks ask one).
    ({"generationConfig": {"responseMimeType": "application/json"}}, False),
    ({"generationConfig": {"responseJsonSchema": {"type": "object"}}}, False),
    ({"generationConfig": {"responseMimeType": "text/plain", "temperature": 0}}, True),
    # ... and, before Gemini 3, beside built-in tools alone.
    ({"tools": [{"googleSearch": {}}]}, False),
    ({"tools": [{"googleSearch": {}}, {"functionDeclarations": []}]}, True),
])
def test_gemini_is_offered_the_tool_only_where_it_takes_it(extra, offered):
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}], **extra}
    assert may_offer("gemini", body) is offered
    assert not may_offer("gemini", {"contents": "not a list"})
