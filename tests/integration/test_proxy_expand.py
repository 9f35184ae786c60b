"""The expand tool in proxy mode, end to end: `contextsynth serve` between the official
SDKs and a recording fake upstream whose model calls `contextsynth_expand` with a handle
from the notes it was sent. The client gets the model's next answer and never the tool;
the upstream's second request holds the original text."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import openai
import pytest

from app.api.auth import hash_key
from app.corpus import CORPUS_DIR, load
from tests.support.convert import to_anthropic, to_responses
from tests.support.fake_upstream import FakeUpstream, Received, Scripted
from tests.support.subprocess_server import running_service

TOOL = "contextsynth_expand"
HANDLE = re.compile(r"cs_\d{20}")
KEYS = {"cs-key-alpha": "alpha", "cs-key-beta": "beta"}


def _transcript(run: str = "tau-airline-gpt4o-task002-trial1") -> list[dict[str, Any]]:
    messages = load(CORPUS_DIR / f"{run}.jsonl")
    last = max(i for i, m in enumerate(messages) if m["role"] == "assistant")
    return messages[:last]


@pytest.fixture(scope="module")
def world() -> Iterator[tuple[str, FakeUpstream]]:
    with FakeUpstream() as upstream:
        env = {"CONTEXTSYNTH_PROXY_OPENAI_URL": f"{upstream.url}/v1",
               "CONTEXTSYNTH_PROXY_ANTHROPIC_URL": upstream.url,
               "CONTEXTSYNTH_PROXY_EXPAND_ROUNDS": "2",
               "CONTEXTSYNTH_API_KEYS": json.dumps({hash_key(k): t for k, t in KEYS.items()})}
        with running_service(env) as url:
            yield url, upstream


@pytest.fixture
def upstream(world):
    _, fake = world
    fake.received.clear()
    yield fake
    fake.answer = None


def _openai(url: str, key: str = "cs-key-alpha", **headers: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key="sk-caller", max_retries=0,
                         default_headers={"x-contextsynth-key": key, **headers})


def _handle_in(received: Received) -> str:
    return HANDLE.findall(json.dumps(received.body))[0]


# The model's answers, in each provider's shape: a call of the tool, or text.
def _chat(handle: str | None) -> Scripted:
    message: dict[str, Any] = {"role": "assistant", "content": "Rebooked." if not handle
                               else None}
    if handle:
        message["tool_calls"] = [{"id": "call_x1", "type": "function", "function": {
            "name": TOOL, "arguments": json.dumps({"handle": handle})}}]
    return Scripted(200, {"id": "chatcmpl-x", "object": "chat.completion", "created": 1,
                          "model": "gpt-4o-mini", "choices": [{
                              "index": 0, "message": message,
                              "finish_reason": "tool_calls" if handle else "stop"}],
                          "usage": {"prompt_tokens": 900, "completion_tokens": 20,
                                    "total_tokens": 920}})


def _message(handle: str | None) -> Scripted:
    content = [{"type": "tool_use", "id": "toolu_x1", "name": TOOL, "input": {
        "handle": handle}}] if handle else [{"type": "text", "text": "Rebooked."}]
    return Scripted(200, {"id": "msg_x", "type": "message", "role": "assistant",
                          "model": "claude-haiku-4-5", "content": content,
                          "stop_reason": "tool_use" if handle else "end_turn",
                          "stop_sequence": None,
                          "usage": {"input_tokens": 900, "output_tokens": 20}})


def _response(handle: str | None) -> Scripted:
    item: dict[str, Any] = {"type": "function_call", "id": "fc_x1", "call_id": "call_x1",
                            "name": TOOL, "arguments": json.dumps({"handle": handle}),
                            "status": "completed"} if handle else {
        "type": "message", "id": "msg_x1", "role": "assistant", "status": "completed",
        "content": [{"type": "output_text", "text": "Rebooked.", "annotations": []}]}
    return Scripted(200, {"id": "resp_x", "object": "response", "created_at": 1,
                          "status": "completed", "model": "gpt-5-mini",
                          "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
                          "output": [item], "usage": {
                              "input_tokens": 900, "output_tokens": 20, "total_tokens": 920,
                              "input_tokens_details": {"cached_tokens": 0},
                              "output_tokens_details": {"reasoning_tokens": 0}}})


def _chat_stream(handle: str | None) -> Scripted:
    """A streamed completion: some text, then the tool's call cut over two chunks, or
    the rest of the answer."""
    base = {"id": "chatcmpl-s", "object": "chat.completion.chunk", "created": 1,
            "model": "gpt-4o-mini"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    events: list[tuple[str | None, dict[str, Any] | str]] = [
        (None, chunk({"role": "assistant", "content": ""}))]
    if handle:
        events += [(None, chunk({"content": "Let me check. "})),
                   (None, chunk({"tool_calls": [{"index": 0, "id": "call_s1",
                                                 "type": "function", "function": {
                                                     "name": TOOL, "arguments": '{"hand'}}]})),
                   (None, chunk({"tool_calls": [{"index": 0, "function": {
                       "arguments": f'le": "{handle}"}}'}}]})),
                   (None, chunk({}, "tool_calls"))]
    else:
        events += [(None, chunk({"content": "Rebooked."})), (None, chunk({}, "stop"))]
    return Scripted(200, {}, events=[*events, (None, "[DONE]")])


def _message_stream(handle: str | None) -> Scripted:
    """A streamed message: text, then the tool's call (its input over two deltas), or
    the rest of the answer in a block of its own."""
    start = {"id": "msg_s", "type": "message", "role": "assistant", "content": [],
             "model": "claude-haiku-4-5", "stop_reason": None, "stop_sequence": None,
             "usage": {"input_tokens": 900, "output_tokens": 1}}
    events: list[tuple[str | None, dict[str, Any] | str]] = [
        ("message_start", {"type": "message_start", "message": start})]

    def text(index: int, said: str) -> list[tuple[str | None, dict[str, Any] | str]]:
        return [("content_block_start", {"type": "content_block_start", "index": index,
                                         "content_block": {"type": "text", "text": ""}}),
                ("content_block_delta", {"type": "content_block_delta", "index": index,
                                         "delta": {"type": "text_delta", "text": said}}),
                ("content_block_stop", {"type": "content_block_stop", "index": index})]

    if handle:
        events += [*text(0, "Let me check. "),
                   ("content_block_start", {"type": "content_block_start", "index": 1,
                                            "content_block": {"type": "tool_use",
                                                              "id": "toolu_s1", "name": TOOL,
                                                              "input": {}}}),
                   ("content_block_delta", {"type": "content_block_delta", "index": 1,
                                            "delta": {"type": "input_json_delta",
                                                      "partial_json": '{"handle": "'}}),
                   ("content_block_delta", {"type": "content_block_delta", "index": 1,
                                            "delta": {"type": "input_json_delta",
                                                      "partial_json": f'{handle}"}}'}}),
                   ("content_block_stop", {"type": "content_block_stop", "index": 1})]
    else:
        events += text(0, "Rebooked.")
    events += [("message_delta", {"type": "message_delta", "delta": {
                   "stop_reason": "tool_use" if handle else "end_turn", "stop_sequence": None},
                   "usage": {"output_tokens": 20}}),
               ("message_stop", {"type": "message_stop"})]
    return Scripted(200, {}, events=events)


def _response_stream(handle: str | None) -> Scripted:
    """A streamed response: a message, then the tool's call (its arguments over two
    deltas), or the rest of the answer in a message of its own."""
    rid = "resp_1" if handle else "resp_2"
    base = {"id": rid, "object": "response", "created_at": 1, "model": "gpt-5-mini",
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "output": []}
    said = "Let me check. " if handle else "Rebooked."
    message = {"type": "message", "id": f"msg_{rid}", "role": "assistant",
               "status": "completed", "content": [{"type": "output_text", "text": said,
                                                   "annotations": []}]}
    part = {"type": "output_text", "text": "", "annotations": []}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {**base, "status": "in_progress"}},
        {"type": "response.in_progress", "response": {**base, "status": "in_progress"}},
        {"type": "response.output_item.added", "output_index": 0,
         "item": {**message, "status": "in_progress", "content": []}},
        {"type": "response.content_part.added", "item_id": message["id"], "output_index": 0,
         "content_index": 0, "part": part},
        {"type": "response.output_text.delta", "item_id": message["id"], "output_index": 0,
         "content_index": 0, "delta": said, "logprobs": []},
        {"type": "response.output_text.done", "item_id": message["id"], "output_index": 0,
         "content_index": 0, "text": said, "logprobs": []},
        {"type": "response.content_part.done", "item_id": message["id"], "output_index": 0,
         "content_index": 0, "part": {**part, "text": said}},
        {"type": "response.output_item.done", "output_index": 0, "item": message}]
    output: list[dict[str, Any]] = [message]
    if handle:
        call = {"type": "function_call", "id": "fc_s1", "call_id": "call_s1", "name": TOOL,
                "arguments": json.dumps({"handle": handle}), "status": "completed"}
        events += [
            {"type": "response.output_item.added", "output_index": 1,
             "item": {**call, "arguments": "", "status": "in_progress"}},
            {"type": "response.function_call_arguments.delta", "item_id": "fc_s1",
             "output_index": 1, "delta": call["arguments"][:9]},
            {"type": "response.function_call_arguments.delta", "item_id": "fc_s1",
             "output_index": 1, "delta": call["arguments"][9:]},
            {"type": "response.function_call_arguments.done", "item_id": "fc_s1",
             "output_index": 1, "arguments": call["arguments"]},
            {"type": "response.output_item.done", "output_index": 1, "item": call}]
        output.append(call)
    events.append({"type": "response.completed", "response": {
        **base, "status": "completed", "output": output, "usage": {
            "input_tokens": 900, "output_tokens": 20, "total_tokens": 920,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0}}}})
    numbered = [{**e, "sequence_number": n} for n, e in enumerate(events)]
    return Scripted(200, {}, events=[(e["type"], e) for e in numbered])


def _expands_once(make):
    """The model calls the tool on the first round with a handle its notes show, then
    answers."""
    def answer(received: Received) -> Scripted:
        first = not any(TOOL in json.dumps(m) for m in received.body.get(
            "messages", received.body.get("input", []))[-3:])
        return make(_handle_in(received) if first else None)
    return answer


def _original_text(url: str, key: str, received: Received) -> str:
    """What the handle the model called gives back, read through GET /expand."""
    handle = _handle_in(received)
    return httpx.get(f"{url}/expand/{handle}",
                     headers={"authorization": f"Bearer {key}"}).text


def test_chat_completions_the_client_gets_the_answer_after_the_expansion(world, upstream):
    url, _ = world
    upstream.answer = _expands_once(_chat)
    raw = _openai(url).chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=_transcript())  # type: ignore[arg-type]
    completion = raw.parse()
    assert completion.choices[0].message.content == "Rebooked."
    assert completion.choices[0].message.tool_calls is None
    assert raw.headers["x-contextsynth-expansions"] == "1"
    assert raw.headers["x-contextsynth-expansion-tokens"] == "920"
    first, second = upstream.received
    assert any(t["function"]["name"] == TOOL for t in first.body["tools"])
    # The second round: the model's call, then the originals the handle names.
    call, result = second.body["messages"][-2:]
    assert call["tool_calls"][0]["function"]["name"] == TOOL
    assert result["role"] == "tool" and result["tool_call_id"] == "call_x1"
    original = json.loads(_original_text(url, "cs-key-alpha", first))["messages"][0]
    assert json.dumps(original["content"])[1:40] in json.dumps(result["content"])
    # This service's request id (x-request-id: the upstream sent none of its own).
    rid = raw.headers["x-request-id"]
    receipt = httpx.get(f"{url}/v1/contextsynth/receipts/{rid}",
                        headers={"authorization": "Bearer cs-key-alpha"}).json()
    assert receipt["expanded"] == [_handle_in(first)]


def test_messages_the_client_gets_the_answer_after_the_expansion(world, upstream):
    url, _ = world
    upstream.answer = _expands_once(_message)
    payload = to_anthropic(_transcript())
    client = anthropic.Anthropic(base_url=url, api_key="sk-ant-caller", max_retries=0,
                                 default_headers={"x-contextsynth-key": "cs-key-alpha"})
    raw = client.messages.with_raw_response.create(
        model="claude-haiku-4-5", max_tokens=256, system=payload["system"],
        messages=payload["messages"])
    message = raw.parse()
    assert [b.type for b in message.content] == ["text"] and message.stop_reason == "end_turn"
    assert raw.headers["x-contextsynth-expansions"] == "1"
    first, second = upstream.received
    assert any(t["name"] == TOOL for t in first.body["tools"])
    said, replies = second.body["messages"][-2:]
    assert said["content"][0]["name"] == TOOL
    assert replies["content"][0]["type"] == "tool_result" and \
        replies["content"][0]["tool_use_id"] == "toolu_x1"
    assert '"role"' in replies["content"][0]["content"]


def test_responses_the_client_gets_the_answer_after_the_expansion(world, upstream):
    url, _ = world
    upstream.answer = _expands_once(_response)
    payload = to_responses(_transcript())
    raw = _openai(url).responses.with_raw_response.create(
        model="gpt-5-mini", instructions=payload["instructions"], input=payload["input"])
    response = raw.parse()
    assert response.output_text == "Rebooked."
    assert raw.headers["x-contextsynth-expansions"] == "1"
    first, second = upstream.received
    assert any(t.get("name") == TOOL for t in first.body["tools"])
    call, output = second.body["input"][-2:]
    assert call["type"] == "function_call" and call["name"] == TOOL
    assert output == {"type": "function_call_output", "call_id": "call_x1",
                      "output": output["output"]} and '"role"' in output["output"]


def test_another_tenants_handle_gives_the_model_nothing_of_it(world, upstream):
    url, _ = world
    upstream.answer = _expands_once(_chat)
    _openai(url, "cs-key-alpha").chat.completions.create(
        model="gpt-4o-mini", messages=_transcript())  # type: ignore[arg-type]
    alphas = _handle_in(upstream.received[0])
    upstream.received.clear()
    # Beta's model, in a run of its own, asks for alpha's handle.
    upstream.answer = lambda r: _chat(alphas if len(upstream.received) == 1 else None)
    _openai(url, "cs-key-beta").chat.completions.create(
        model="gpt-4o-mini",
        messages=_transcript("tau-airline-gpt4o-task003-trial0"))  # type: ignore[arg-type]
    result = upstream.received[1].body["messages"][-1]
    assert result["role"] == "tool" and "no span" in result["content"]
    assert '"role"' not in result["content"]  # none of alpha's messages
    page = httpx.get(f"{url}/metrics").text
    counts = {line.split("{")[1].split("}")[0]: float(line.rsplit(" ", 1)[1])
              for line in page.splitlines()
              if line.startswith("contextsynth_proxy_expansions_total{")}
    assert counts['result="not_found",upstream="openai"'] >= 1
    assert counts['result="found",upstream="openai"'] >= 1


def test_a_model_that_keeps_calling_stops_at_the_round_limit(world, upstream):
    url, _ = world
    upstream.answer = lambda r: _chat(_handle_in(r))  # always the tool
    raw = _openai(url).chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=_transcript())  # type: ignore[arg-type]
    completion = raw.parse()
    assert len(upstream.received) == 3  # the first request and two rounds
    assert raw.headers["x-contextsynth-expansions"] == "2"
    assert completion.choices[0].message.tool_calls is None  # ours taken out
    assert completion.choices[0].finish_reason == "stop"


def test_the_tool_is_offered_only_where_it_can_be_answered(world, upstream):
    url, _ = world
    run = _transcript()
    _openai(url, **{"x-contextsynth-expand": "off"}).chat.completions.create(
        model="gpt-4o-mini", messages=run)  # type: ignore[arg-type]
    forced = {"type": "function", "function": {"name": "book_flight"}}
    _openai(url).chat.completions.create(model="gpt-4o-mini", messages=run,
                                         tool_choice=forced)  # type: ignore[arg-type]
    _openai(url).chat.completions.create(model="gpt-4o-mini",
                                         messages=run[:3])  # type: ignore[arg-type]
    # off, forced, nothing compacted
    for received in upstream.received:
        assert TOOL not in json.dumps(received.body.get("tools", []))


def test_a_stream_goes_on_with_the_next_round_and_never_shows_the_tool(world, upstream):
    url, _ = world
    upstream.answer = _expands_once(_chat_stream)
    stream = _openai(url).chat.completions.create(
        model="gpt-4o-mini", messages=_transcript(), stream=True)  # type: ignore[arg-type]
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Let me check. Rebooked."
    assert not any(c.choices[0].delta.tool_calls for c in chunks if c.choices)
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    first, second = upstream.received
    said, result = second.body["messages"][-2:]
    assert said["content"] == "Let me check. "
    assert json.loads(said["tool_calls"][0]["function"]["arguments"]) == {
        "handle": _handle_in(first)}
    assert result["tool_call_id"] == "call_s1" and '"role"' in result["content"]


def test_a_stream_that_keeps_calling_ends_at_the_limit_as_a_stop(world, upstream):
    url, _ = world
    upstream.answer = lambda r: _chat_stream(_handle_in(r))
    chunks = list(_openai(url).chat.completions.create(
        model="gpt-4o-mini", messages=_transcript(), stream=True))  # type: ignore[arg-type]
    assert len(upstream.received) == 3
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Let me check. " * 3
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"


def test_a_messages_stream_numbers_the_next_rounds_blocks_on(world, upstream):
    url, _ = world
    upstream.answer = _expands_once(_message_stream)
    payload = to_anthropic(_transcript())
    client = anthropic.Anthropic(base_url=url, api_key="sk-ant-caller", max_retries=0,
                                 default_headers={"x-contextsynth-key": "cs-key-alpha"})
    with client.messages.stream(model="claude-haiku-4-5", max_tokens=256,
                                system=payload["system"],
                                messages=payload["messages"]) as stream:
        message = stream.get_final_message()
    assert [(b.type, getattr(b, "text", None)) for b in message.content] == [
        ("text", "Let me check. "), ("text", "Rebooked.")]
    assert message.stop_reason == "end_turn"
    first, second = upstream.received
    said, replies = second.body["messages"][-2:]
    assert [b["type"] for b in said["content"]] == ["text", "tool_use"]
    assert said["content"][1]["input"] == {"handle": _handle_in(first)}
    assert replies["content"][0]["tool_use_id"] == "toolu_s1"


def test_a_responses_stream_is_one_response_with_every_item_shown(world, upstream):
    url, _ = world
    upstream.answer = _expands_once(_response_stream)
    payload = to_responses(_transcript())
    with _openai(url).responses.stream(model="gpt-5-mini", input=payload["input"],
                                       instructions=payload["instructions"]) as stream:
        events = list(stream)
        final = stream.get_final_response()
    assert final.id == "resp_1" and final.output_text == "Let me check. Rebooked."
    assert [item.type for item in final.output] == ["message", "message"]
    numbers = [e.sequence_number for e in events]
    assert numbers == list(range(len(numbers)))
    assert [e.type for e in events].count("response.created") == 1
    assert not any(TOOL in repr(e) for e in events)
    first, second = upstream.received
    call, output = second.body["input"][-2:]
    assert call["name"] == TOOL and output["call_id"] == "call_s1"
    assert json.loads(call["arguments"]) == {"handle": _handle_in(first)}


def test_an_expired_handle_gives_the_model_a_result_that_says_so():
    with FakeUpstream() as upstream:
        env = {"CONTEXTSYNTH_PROXY_OPENAI_URL": f"{upstream.url}/v1",
               "CONTEXTSYNTH_EXPAND_TTL_S": "1"}
        with running_service(env) as url:
            client = openai.OpenAI(base_url=f"{url}/v1", api_key="sk-caller", max_retries=0)
            client.chat.completions.create(model="gpt-4o-mini",
                                           messages=_transcript())  # type: ignore[arg-type]
            made = _handle_in(upstream.received[0])
            time.sleep(1.5)  # past the handle's time to live
            upstream.received.clear()
            upstream.answer = lambda r: _chat(made if len(upstream.received) == 1 else None)
            answer = client.chat.completions.create(
                model="gpt-4o-mini",  # another run: it does not make that handle again
                messages=_transcript("tau-airline-gpt4o-task003-trial0"))  # type: ignore[arg-type]
    result = upstream.received[1].body["messages"][-1]
    assert result["role"] == "tool" and "no span" in result["content"] and \
        "expire" in result["content"]
    assert answer.choices[0].message.content == "Rebooked."


def _before_answer(messages: list[dict[str, Any]], answer: int) -> list[dict[str, Any]]:
    """The two items before the one at ``answer``."""
    return messages[answer - 2 : answer]


def test_what_the_model_read_is_in_the_next_request_before_its_answer(world, upstream):
    # The client never saw the round; its next request holds the answer. The upstream
    # gets the call and the result back in before that answer, as the model had them,
    # and compaction reads them like any tool result.
    url, _ = world
    upstream.answer = _expands_once(_chat)
    client = _openai(url)
    history = _transcript()
    answer = client.chat.completions.create(model="gpt-4o-mini", messages=history)  # type: ignore[arg-type]
    first = upstream.received[0]
    upstream.received.clear()
    upstream.answer = lambda r: _chat(None)
    follow_up = [*history, answer.choices[0].message.model_dump(exclude_none=True),
                 {"role": "user", "content": "Thanks. Is the seat the same?"}]
    client.chat.completions.create(model="gpt-4o-mini", messages=follow_up)  # type: ignore[arg-type]
    (sent,) = upstream.received
    messages = sent.body["messages"]
    at = max(i for i, m in enumerate(messages) if m.get("content") == "Rebooked.")
    call, result = _before_answer(messages, at)
    assert call["tool_calls"][0]["function"]["name"] == TOOL
    assert json.loads(call["tool_calls"][0]["function"]["arguments"]) == {
        "handle": _handle_in(first)}
    assert result["role"] == "tool" and result["tool_call_id"] == "call_x1"
    assert any(t["function"]["name"] == TOOL for t in sent.body["tools"])  # declared
    # With the tool off for a request, its history is the client's own.
    upstream.received.clear()
    _openai(url, **{"x-contextsynth-expand": "off"}).chat.completions.create(
        model="gpt-4o-mini", messages=follow_up)  # type: ignore[arg-type]
    assert TOOL not in json.dumps(upstream.received[0].body)


def test_a_messages_conversation_gets_its_rounds_back_too(world, upstream):
    url, _ = world
    upstream.answer = _expands_once(_message)
    payload = to_anthropic(_transcript())
    client = anthropic.Anthropic(base_url=url, api_key="sk-ant-caller", max_retries=0,
                                 default_headers={"x-contextsynth-key": "cs-key-alpha"})
    message = client.messages.create(model="claude-haiku-4-5", max_tokens=256,
                                     system=payload["system"], messages=payload["messages"])
    upstream.received.clear()
    upstream.answer = lambda r: _message(None)
    follow_up = [*payload["messages"],
                 {"role": "assistant", "content": [b.model_dump() for b in message.content]},
                 {"role": "user", "content": "Thanks. Is the seat the same?"}]
    client.messages.create(model="claude-haiku-4-5", max_tokens=256,
                           system=payload["system"], messages=follow_up)
    (sent,) = upstream.received
    messages = sent.body["messages"]
    at = max(i for i, m in enumerate(messages) if "Rebooked." in json.dumps(m))
    said, replies = _before_answer(messages, at)
    assert said["content"][-1]["type"] == "tool_use" and said["content"][-1]["name"] == TOOL
    assert replies["content"][0]["tool_use_id"] == "toolu_x1"
    assert any(t["name"] == TOOL for t in sent.body["tools"])


def test_a_responses_stream_gets_its_rounds_back_without_a_repeated_item(world, upstream):
    url, _ = world
    upstream.answer = _expands_once(_response_stream)
    payload = to_responses(_transcript())
    client = _openai(url)
    with client.responses.stream(model="gpt-5-mini", input=payload["input"],
                                 instructions=payload["instructions"]) as stream:
        final = stream.get_final_response()
    upstream.received.clear()
    upstream.answer = lambda r: _response(None)
    follow_up = [*payload["input"],
                 *[item.model_dump(exclude_none=True) for item in final.output],
                 {"role": "user", "content": "Thanks. Is the seat the same?"}]
    client.responses.create(model="gpt-5-mini", input=follow_up,
                            instructions=payload["instructions"])
    (sent,) = upstream.received
    items = sent.body["input"]
    ids = [i["id"] for i in items if isinstance(i, dict) and i.get("id")]
    assert len(ids) == len(set(ids))  # the text the client was shown comes once
    calls = [n for n, i in enumerate(items) if i.get("type") == "function_call"
             and i.get("name") == TOOL]
    assert len(calls) == 1
    at = calls[0]
    assert items[at - 1]["id"] == "msg_resp_1"  # after the text the model wrote first
    assert items[at + 1]["type"] == "function_call_output" and \
        items[at + 1]["call_id"] == "call_s1"
    assert items[at + 2]["id"] == "msg_resp_2"  # then the answer it led to
