import copy
import json

import pytest

from app.engine.errors import AmbiguousFormat, InvalidTranscript, UnknownFormat
from app.engine.transcript.formats import resolve_format
from app.engine.transcript.formats.responses import ResponsesFormat
from tests.support.convert import to_anthropic
from tests.support.corpus import load_named

OPENAI = [
    {"role": "system", "content": "be brief", "x_trace": {"id": 7}},
    {"role": "user", "content": "list files", "name": "alice"},
    {"role": "assistant", "content": None, "refusal": None, "tool_calls": [
        {"id": "c1", "type": "function", "x_meta": 1,
         "function": {"name": "bash", "arguments": "{\"command\": \"ls\"}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "a.py\nb.py"},
    {"role": "user", "content": [{"type": "text", "text": "and?", "x": 1},
                                 {"type": "image_url", "image_url": {"url": "data:,"}}]},
]

ANTHROPIC = {
    "system": [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}],
    "messages": [
        {"role": "user", "content": "list files"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "let me look", "signature": "sig"},
            {"type": "text", "text": "Looking."},
            {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "ls"}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "a.py", "is_error": False,
             "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "thanks"},
        ]},
    ],
}


def test_openai_round_trip_keeps_unknown_fields(formats):
    wire = formats["openai"]
    payload = {"messages": copy.deepcopy(OPENAI)}
    assert wire.render(wire.parse(payload)) == {"messages": OPENAI}


def test_anthropic_round_trip_keeps_blocks_and_fields(formats):
    wire = formats["anthropic"]
    transcript = wire.parse(copy.deepcopy(ANTHROPIC))
    roles = [m.role for m in transcript.messages]
    assert roles == ["system", "user", "assistant", "tool", "user"]
    assert transcript.messages[2].tool_calls[0].arguments == '{"command": "ls"}'
    assert wire.render(transcript) == ANTHROPIC


def test_anthropic_is_error_is_read(formats):
    payload = copy.deepcopy(ANTHROPIC)
    payload["messages"][2]["content"][0]["is_error"] = True
    tool = formats["anthropic"].parse(payload).messages[3]
    assert tool.is_error


def test_real_transcript_round_trips_in_both_formats(formats):
    messages = load_named("tau-airline-gpt4o-task002")
    assert formats["openai"].render(formats["openai"].parse({"messages": messages})) == {
        "messages": messages}
    body = to_anthropic(messages)
    assert formats["anthropic"].render(formats["anthropic"].parse(body)) == body


@pytest.mark.parametrize(("payload", "expected"), [
    ({"messages": OPENAI}, "openai"),
    (ANTHROPIC, "anthropic"),
    ({"messages": [{"role": "user", "content": "hi"}]}, "openai"),
    ({"messages": [{"role": "user", "content": "hi"}], "system": "s"}, "anthropic"),
])
def test_auto_detection(formats, payload, expected):
    assert resolve_format(formats, "auto", payload).name == expected


def test_mixed_payload_is_rejected_with_both_shapes_named(formats):
    mixed = {"messages": [OPENAI[0], *ANTHROPIC["messages"]]}
    with pytest.raises(AmbiguousFormat) as err:
        resolve_format(formats, "auto", mixed)
    assert "openai" in err.value.detail and "anthropic" in err.value.detail
    assert "tool_use" in err.value.detail


def test_a_long_transcript_is_told_apart_by_its_first_shapes(formats):
    # Mixed in late, after hundreds of OpenAI messages: still found and named.
    steps = [m for _ in range(150) for m in OPENAI[2:4]]
    late = {"messages": [OPENAI[0], *steps, *ANTHROPIC["messages"]]}
    with pytest.raises(AmbiguousFormat) as err:
        resolve_format(formats, "auto", late)
    assert "tool_use" in err.value.detail
    # Each format names at most two places, not one per message of a long run.
    assert err.value.detail.count("messages[") <= 4
    assert all(len(f.evidence(late)) <= 2 for f in formats.values())


def test_unknown_format_lists_known_ones(formats):
    with pytest.raises(UnknownFormat) as err:
        resolve_format(formats, "gemini-ish", {"messages": []})
    assert "auto, openai, anthropic" in err.value.detail


@pytest.mark.parametrize(("message", "needle"), [
    ({"role": "robot", "content": "x"}, "role 'robot'"),
    ({"role": "tool", "content": "x"}, "tool_call_id"),
    ({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "f", "arguments": {"a": 1}}}]},
     "JSON string"),
    ({"role": "user", "content": 5}, "content"),
    ("not an object", "must be an object"),
])
def test_openai_parse_errors_say_what_and_where(formats, message, needle):
    with pytest.raises(InvalidTranscript) as err:
        formats["openai"].parse({"messages": [{"role": "user", "content": "t"}, message]})
    assert needle in err.value.detail
    assert err.value.pointer == "/messages/1"


# Claude Code sends reminders as system messages among the messages, after a user's.
CLAUDE_CODE = {"system": [{"type": "text", "text": "You are Claude Code."}], "messages": [
    {"role": "user", "content": [{"type": "text", "text": "fix the test"}]},
    {"role": "system", "content": "Available agent types: ..."},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash",
                                       "input": {"command": "ls"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                  "content": "a.py"}]},
    {"role": "system", "content": [{"type": "text", "text": "Tasks unused lately."}]},
]}


def test_anthropic_keeps_system_messages_in_their_place(formats):
    wire = formats["anthropic"]
    transcript = wire.parse(copy.deepcopy(CLAUDE_CODE))
    assert [m.role for m in transcript.messages] == [
        "system", "user", "system", "assistant", "tool", "system"]
    assert wire.render(transcript) == CLAUDE_CODE


def test_a_user_message_after_a_system_message_joins_the_users_before_it(formats):
    """What a compaction makes of it: a note (a user message) put after the reminder
    would be a second user message in a row; it joins the first, the reminder after."""
    from dataclasses import replace

    from app.engine.transcript.model import Message, Part

    wire = formats["anthropic"]
    t = wire.parse(copy.deepcopy(CLAUDE_CODE))
    note = Message("user", (Part("text", "[notes] earlier work"),))
    out = wire.render(replace(t, messages=(*t.messages[:3], note, *t.messages[3:])))
    assert [m["role"] for m in out["messages"]] == [
        "user", "system", "assistant", "user", "system"]
    assert out["messages"][0]["content"][-1] == {"type": "text", "text": "[notes] earlier work"}


def test_anthropic_rejects_other_roles_in_messages(formats):
    with pytest.raises(InvalidTranscript, match="user, assistant or system"):
        formats["anthropic"].parse({"messages": [{"role": "tool", "content": "x"}]})


def test_anthropic_renders_edited_tool_input_as_object(formats):
    from dataclasses import replace

    wire = formats["anthropic"]
    t = wire.parse(copy.deepcopy(ANTHROPIC))
    assistant = t.messages[2]
    edited = replace(assistant, tool_calls=(
        replace(assistant.tool_calls[0], arguments=json.dumps({"command": "ls -la"})),))
    out = wire.render(replace(t, messages=(*t.messages[:2], edited, *t.messages[3:])))
    block = out["messages"][1]["content"][2]
    assert block == {"type": "tool_use", "id": "t1", "name": "bash",
                     "input": {"command": "ls -la"}}


def test_an_item_type_that_is_not_a_string_is_no_evidence_of_a_format():
    # Found by the contract test: {"type": [...]} made the format guess raise (a 500).
    payload = {"messages": [{"type": ["message"], "role": "user"}, {"type": {"a": 1}}]}
    assert ResponsesFormat().evidence(payload) == []
