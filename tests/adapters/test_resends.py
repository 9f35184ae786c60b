"""Bodies that resend an earlier body's messages: parsed past them, read the same."""

from __future__ import annotations

import json
from typing import Any

import orjson
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from app.adapters.jsoncodec import UNREAD, loads_fast
from app.adapters.resends import _START, MIN_BYTES, Resends, _Body
from app.corpus import load, transcript_files
from app.engine.footprint import footprint
from app.evaluation.replay import sample_steps

_PAD = "x" * MIN_BYTES  # makes a body long enough to be remembered


def _system(text: str = "") -> dict[str, Any]:
    return {"role": "system", "content": f"You are an agent. {text}{_PAD}"}


def _taken(read: Any, body: bytes) -> Any:
    """What the service takes a body for: UNREAD sends it to the standard parser."""
    return json.loads(body) if read is UNREAD else read


def _body(messages: list[Any], **fields: Any) -> bytes:
    return orjson.dumps({"messages": messages, **fields})


def test_the_corpus_loop_reads_as_a_whole_parse_and_reuses_the_messages() -> None:
    bodies = Resends()
    for path in transcript_files(None)[:6]:
        messages = load(path)
        previous: list[Any] = []
        for k in sample_steps(messages, None):
            body = _body(messages[:k], tier="mid")
            value = bodies.loads(body)
            assert value == orjson.loads(body)
            # The messages a remembered body sent are the very objects it was read as.
            assert all(a is b for a, b in zip(previous, value["messages"], strict=False))
            previous = value["messages"] if len(body) >= MIN_BYTES else []


def test_agents_sharing_a_long_system_prompt_each_reuse_their_own_messages() -> None:
    bodies = Resends()
    prompt = _system("Follow the policy. " * 1000)  # past the bytes that group bodies
    loops: list[list[Any]] = [[prompt, {"role": "user", "content": f"task {i}"}]
                              for i in range(6)]
    last: list[list[Any]] = [[] for _ in loops]
    for step in range(3):
        for i, messages in enumerate(loops):  # the agents take turns, as they would
            messages.append({"role": "assistant", "content": f"step {step} of {i}"})
            value = bodies.loads(_body(messages))
            assert value["messages"] == messages
            assert all(a is b for a, b in zip(last[i], value["messages"], strict=False))
            if step:
                assert value["messages"][1] is last[i][1]
            last[i] = value["messages"]


def test_an_edited_earlier_message_is_read_from_the_new_body() -> None:
    bodies = Resends()
    first = [_system(), {"role": "user", "content": "fix the bug"},
             {"role": "assistant", "content": "looking"}, {"role": "user", "content": "go"}]
    bodies.loads(_body(first))
    edited = [*first[:2], {"role": "assistant", "content": "looking again"}, *first[3:],
              {"role": "user", "content": "more"}]
    value = bodies.loads(_body(edited))
    assert value["messages"] == edited
    assert value["messages"][0] is not first[0]  # parsed, not the caller's object


def test_a_body_written_with_spaces_is_read_whole_and_still_right() -> None:
    bodies = Resends()
    messages = [_system(), {"role": "user", "content": "héllo \"quoted\" \\ /"}]
    for k in (1, 2, 2):
        body = json.dumps({"messages": messages[:k]}).encode()  # ", " and escaped é
        assert bodies.loads(body) == orjson.loads(body)


def test_messages_are_located_only_where_orjson_writes_them_byte_for_byte() -> None:
    messages = [_system(), {"role": "user", "content": "héllo"}, {"role": "user", "content": "x"}]
    compact = _body(messages)
    start = compact.index(b"[") + 1
    ends = _Body(compact, messages, start).located()
    assert [compact[e:e + 1] for e in ends] == [b",", b",", b"]"]
    escaped = json.dumps({"messages": messages}, separators=(",", ":")).encode()  # \u00e9
    assert _Body(escaped, messages, start).located() == ends[:1]


def test_a_second_messages_key_later_in_the_body_wins_as_in_a_whole_parse() -> None:
    bodies = Resends()
    messages = [_system(), {"role": "user", "content": "task"}]
    bodies.loads(_body(messages))
    body = _body([*messages, {"role": "assistant", "content": "ok"}])[:-1] + \
        b',"messages":[{"role":"user","content":"other"}]}'
    assert bodies.loads(body) == orjson.loads(body)
    assert bodies.loads(body)["messages"] == [{"role": "user", "content": "other"}]


def test_a_nested_messages_key_in_a_new_message_is_read_whole() -> None:
    bodies = Resends()
    messages = [_system(), {"role": "user", "content": "task"}]
    bodies.loads(_body(messages))
    grown = [*messages, {"role": "assistant", "content": [
        {"type": "tool_use", "id": "t1", "name": "send", "input": {"messages": ["hi"]}}]}]
    assert bodies.loads(_body(grown)) == orjson.loads(_body(grown))


def test_numbers_orjson_would_change_are_left_to_the_standard_parser() -> None:
    bodies = Resends()
    messages = [_system(), {"role": "user", "content": "task"}]
    bodies.loads(_body(messages))
    body = _body(messages)[:-2] + b',{"role":"user","content":"n","x":123456789012345678901234,' \
        b'"y":1.5}]}'
    assert bodies.loads(body) is UNREAD
    assert loads_fast(body) is UNREAD


def test_the_bound_holds_and_zero_remembers_nothing() -> None:
    bodies = Resends(max_bytes=16 * MIN_BYTES)
    for i in range(30):
        bodies.loads(_body([_system(str(i)), {"role": "user", "content": "task"}]))
    assert 1 <= len(bodies) < 16
    none = Resends(max_bytes=0)
    none.loads(_body([_system(), {"role": "user", "content": "task"}]))
    assert len(none) == 0



def test_a_body_counts_its_parsed_messages_and_its_bytes_only_until_located() -> None:
    # The parsed messages are most of what a remembered body holds; each is measured
    # once, by the body that parsed it, and a resend adds only its new ones. Read whole,
    # a body holds its bytes (one-off calls locate nothing); once read on from, where
    # its messages end and their fingerprints stand for them: 8 bytes each, with the
    # running weight.
    bodies = Resends()
    messages = [_system(), {"role": "user", "content": "task"}]
    first = _body(messages)
    bodies.loads(first)
    parsed = sum(map(footprint, messages))
    assert bodies.usage.held == len(first) + len(first[:_START]) + parsed + 8 * len(messages)
    more = [*messages, {"role": "assistant", "content": "step " * 200}]
    second = _body(more)
    assert bodies.loads(second)["messages"] == more
    assert bodies.usage.hits == 1 and len(bodies) == 1  # it carried the first one on
    assert bodies.usage.held == len(second[:_START]) + sum(map(footprint, more)) + 24 * len(more)


def test_a_resent_body_differing_in_one_byte_is_read_from_there_on() -> None:
    # The system prompt runs past the bytes that group bodies, so both bodies are compared;
    # one character of it differs, and the lengths are the same.
    prompt = _system("Follow the policy. " * 1000)
    messages = [prompt, {"role": "user", "content": "fix the bug"},
                {"role": "assistant", "content": "looking"}]
    bodies = Resends()
    first = bodies.loads(_body(messages))["messages"]
    bodies.loads(_body([*messages, {"role": "user", "content": "go"}]))  # located now
    sent = _body([*messages, {"role": "user", "content": "go"}])
    for at, edited in ((sent.index(b"looking") + 1, 2), (_START + 500, 0)):
        body = bytearray(sent)
        assert chr(body[at]) in "abcdefghijklmnopqrstuvwxyz ."  # in the message's text
        body[at] = ord("Z")
        value = bodies.loads(bytes(body))
        assert value == orjson.loads(bytes(body))
        assert value["messages"][edited] != messages[edited]
        # The messages before the edited one are the remembered ones; from it on, parsed.
        assert all(a is b for a, b in zip(first[:edited], value["messages"], strict=False))
        assert value["messages"][edited] is not first[edited]


def test_bodies_remembered_hold_no_bytes_once_carried_on() -> None:
    bodies = Resends()
    messages = [_system(), {"role": "user", "content": "task " * 5000}]
    bodies.loads(_body(messages))
    for step in range(3):
        messages.append({"role": "assistant", "content": f"step {step}"})
        bodies.loads(_body(messages))
    assert bodies.usage.hits == 3
    # Each body held its bytes (40 KB here), now only its parsed messages and offsets.
    assert bodies.usage.held < len(_body(messages)[:_START]) + sum(map(footprint, messages)) \
        + 24 * len(messages) + 1


def test_a_body_past_an_eighth_of_the_bound_is_read_whole_and_not_remembered() -> None:
    bodies = Resends(max_bytes=64 * MIN_BYTES)
    log = {"role": "tool", "content": "y" * (8 * MIN_BYTES)}  # a body of a ninth
    body = _body([_system(), {"role": "user", "content": "task"}, log])
    assert bodies.loads(body) == orjson.loads(body)
    assert len(bodies) == 0 and bodies.usage.held == 0
    small = _body([_system(), {"role": "user", "content": "task"}])
    bodies.loads(small)
    assert len(bodies) == 1


_text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=30)
_value = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False,
                                                                        allow_infinity=False)
    | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["a", "messages", "content", "role"]), inner, max_size=3),
    max_leaves=6)
_message = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "tool"]),
                                  "content": _text | st.lists(_value, max_size=2)},
                                 optional={"extra": _value})
_step = st.sampled_from(["append", "edit", "same", "spaces", "field", "other"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_step, _message, st.integers(0, 50)), min_size=1, max_size=12))
# Found here once: a digit run in a reused string, then a float in a new message.
@example([("append", {"role": "user", "content": ""}, 0),
          ("append", {"role": "user", "content": "0" * 19}, 0),
          ("append", {"role": "user", "content": "", "extra": 0.0}, 0)])
def test_any_sequence_of_bodies_reads_as_whole_parses(steps: list[tuple[str, Any, int]],
                                                      ) -> None:
    bodies = Resends()
    convos = {"one": [_system("one")], "other": [_system("one")]}
    name = "one"
    for kind, message, at in steps:
        messages = convos[name]
        fields: dict[str, Any] = {}
        if kind == "append":
            messages.append(message)
        elif kind == "edit":
            messages[at % len(messages)] = message
        elif kind == "field":
            fields = {"tier": "mid", "extra": message}
        elif kind == "other":
            name = "other" if name == "one" else "one"
            convos[name].append(message)
        if kind == "spaces":
            body = json.dumps({"messages": convos[name]}).encode()
        else:  # compact, as orjson writes it (which refuses integers past 64 bits)
            body = json.dumps({"messages": convos[name], **fields}, ensure_ascii=False,
                              separators=(",", ":")).encode()
        # The same value as a whole parse; where loads_fast says UNREAD only out of
        # caution (digits in a reused string, a float in the new part), its value.
        assert _taken(bodies.loads(body), body) == _taken(loads_fast(body), body)
