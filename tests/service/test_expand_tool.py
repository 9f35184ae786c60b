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
