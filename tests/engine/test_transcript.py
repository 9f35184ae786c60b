import pytest

from app.engine.errors import InvalidTranscript
from app.engine.transcript.model import Message, Part, ToolCall, segment, validate_pairs


def user(text: str, index: int = 0) -> Message:
    return Message("user", (Part("text", text),), index=index)


def call(call_id: str, index: int = 0) -> Message:
    return Message("assistant", (), (ToolCall(call_id, "bash", "{}"),), index=index)


def result(call_id: str, index: int = 0) -> Message:
    return Message("tool", (Part("text", "ok"),), tool_call_id=call_id, index=index)


def test_segments_split_head_and_turns():
    messages = [Message("system", (Part("text", "s"),)), user("task"), call("a"), result("a"),
                user("more"), call("b"), result("b")]
    seg = segment(messages)
    assert seg.head_stop == 2
    assert seg.task_index == 1
    assert [(t.start, t.stop) for t in seg.turns] == [(2, 5), (5, 7)]


def test_orphaned_result_names_the_message():
    with pytest.raises(InvalidTranscript) as err:
        validate_pairs([user("t", 0), call("a", 1), result("a", 2), result("zzz", 3)])
    assert "messages[3]" in err.value.detail
    assert "'zzz'" in err.value.detail
    assert err.value.pointer == "/messages/3"


def test_unanswered_call_names_the_assistant_message():
    with pytest.raises(InvalidTranscript) as err:
        validate_pairs([user("t", 0), call("a", 1), user("hello?", 2), call("b", 3),
                        result("b", 4)])
    assert "messages[1]" in err.value.detail and "'a'" in err.value.detail


def test_result_answering_twice_is_rejected():
    with pytest.raises(InvalidTranscript, match="second time"):
        validate_pairs([user("t", 0), call("a", 1), result("a", 2), result("a", 3)])


def test_result_for_an_older_turn_is_rejected():
    with pytest.raises(InvalidTranscript, match="messages\\[4\\]"):
        validate_pairs([user("t", 0), call("a", 1), result("a", 2), call("b", 3),
                        result("a", 4)])
