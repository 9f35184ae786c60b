"""Proxy mode end to end: the official OpenAI and Anthropic SDKs, pointed at a real
``contextsynth serve`` by their base URL and nothing else, against a fake provider over
loopback that records what it received."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest
from anthropic.types import MessageParam
from openai.types.chat import ChatCompletionMessageParam
from pydantic import TypeAdapter

from app.corpus import CORPUS_DIR, load
from tests.support.convert import to_anthropic, to_responses
from tests.support.fake_upstream import FakeUpstream, Scripted
from tests.support.invariants import check_anthropic, check_openai, check_responses
from tests.support.receiver import SECRET, Receiver
from tests.support.subprocess_server import running_service

OPENAI_KEY = "sk-caller-openai-5f3a9c"
HEADER = "x-contextsynth-conversation"
ANTHROPIC_KEY = "sk-ant-caller-8d21e7"


def _transcript() -> list[dict[str, Any]]:
    """A real support-agent run, cut where the agent is about to answer."""
    messages = load(CORPUS_DIR / "tau-airline-gpt4o-task002-trial1.jsonl")
    last = max(i for i, m in enumerate(messages) if m["role"] == "assistant")
    return messages[:last]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, FakeUpstream,
                                                                      Receiver, Path]]:
    log = tmp_path_factory.mktemp("proxy") / "service.log"
    with FakeUpstream() as upstream, Receiver() as receiver:
        env = {"CONTEXTSYNTH_PROXY_OPENAI_URL": f"{upstream.url}/v1",
               "CONTEXTSYNTH_PROXY_ANTHROPIC_URL": upstream.url,
               "CONTEXTSYNTH_LOG_LEVEL": "info",
               "CONTEXTSYNTH_WEBHOOKS": json.dumps([{"url": receiver.url,
                                                     "secret": SECRET}]),
               "CONTEXTSYNTH_WEBHOOKS_ALLOW_PRIVATE": "true"}
        with running_service(env, log=log) as url:
            yield url, upstream, receiver, log


def _openai(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key=OPENAI_KEY, max_retries=0)


def _anthropic(url: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=url, api_key=ANTHROPIC_KEY, max_retries=0)


def test_openai_sdk_gets_the_answer_to_a_compacted_request(world):
    url, upstream, _, _ = world
    sent = _transcript()
    raw = _openai(url).chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=sent)  # type: ignore[arg-type]
    completion = raw.parse()
    # The provider's answer, typed by the SDK: a tool call round-trips.
    call = completion.choices[0].message.tool_calls[0]  # type: ignore[index]
    assert call.function.name == "book_flight" and call.id == "call_9"
    # Its headers too: its request id (what the SDK reports), its rate limits.
    assert raw.headers["x-request-id"] == "req_upstream_1" == completion._request_id
    assert raw.headers["x-ratelimit-remaining-tokens"] == "9000"
    assert raw.headers["x-contextsynth-compaction"] == "compacted"
    before, after = (int(raw.headers[f"x-contextsynth-tokens-{w}"]) for w in ("before", "after"))
    assert after < before
    got = upstream.received[-1]
    assert got.path == "/v1/chat/completions" and got.body["model"] == "gpt-4o-mini"
    assert got.headers["authorization"] == f"Bearer {OPENAI_KEY}"
    assert len(got.body["messages"]) < len(sent)
    TypeAdapter(list[ChatCompletionMessageParam]).validate_python(got.body["messages"])
    check_openai(sent, got.body["messages"])
    # What was dropped, by this service's id for the request.
    rid = raw.headers["x-contextsynth-request-id"]
    receipt = httpx.get(f"{url}/v1/contextsynth/receipts/{rid}").json()
    assert receipt["tokens_before"] == before and receipt["receipt"]["dropped"]


def test_openai_stream_passes_through(world):
    url, upstream, _, _ = world
    stream = _openai(url).chat.completions.create(model="gpt-4o-mini", messages=_transcript(),
                                                   stream=True)  # type: ignore[arg-type]
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert text == FakeUpstream.TEXT.replace(" ", "")
    assert upstream.received[-1].body["stream"] is True


def test_a_proxied_answer_carries_each_of_date_and_server_once(world):
    """The provider's date and server headers would go out beside the service's own."""
    url, _, _, _ = world
    body = {"model": "gpt-4o-mini", "messages": _transcript()}
    auth = {"authorization": f"Bearer {OPENAI_KEY}"}
    with httpx.Client(base_url=url, timeout=30, headers=auth) as client:
        answers = [client.post("/v1/chat/completions", json=body),
                   client.post("/v1/chat/completions", json={**body, "stream": True}),
                   client.post("/v1/messages/count_tokens", json={
                       "model": "claude-haiku-4-5",
                       "messages": [{"role": "user", "content": "hi"}]}),
                   client.get("/v1/models")]
    for r in answers:
        assert r.status_code == 200, r.text
        assert [len(r.headers.get_list(n)) for n in ("date", "server")] == [1, 1], \
            (r.request.url, r.headers)


def test_anthropic_sdk_gets_the_answer_to_a_compacted_request(world):
    url, upstream, _, _ = world
    payload = to_anthropic(_transcript())
    raw = _anthropic(url).messages.with_raw_response.create(
        model="claude-haiku-4-5", max_tokens=256, system=payload["system"],
        messages=payload["messages"])
    message = raw.parse()
    assert message.content[0].type == "tool_use" and message.content[0].name == "book_flight"
    assert raw.headers["request-id"] == "req_upstream_2"
    assert raw.headers["x-contextsynth-compaction"] == "compacted"
    got = upstream.received[-1]
    assert got.path == "/v1/messages"
    # The key as the SDK sent it (x-api-key, or a bearer token in newer SDKs).
    sent_key = got.headers.get("x-api-key") or \
        got.headers.get("authorization", "").removeprefix("Bearer ")
    assert sent_key == ANTHROPIC_KEY
    assert got.headers["anthropic-version"]  # the SDK's own headers go through
    assert got.body["max_tokens"] == 256 and got.body["system"] == payload["system"]
    TypeAdapter(list[MessageParam]).validate_python(got.body["messages"])
    check_anthropic(payload, {"system": got.body["system"], "messages": got.body["messages"]})
    assert len(json.dumps(got.body)) < len(json.dumps(payload))


def test_anthropic_stream_passes_through(world):
    url, _, _, _ = world
    payload = to_anthropic(_transcript())
    with _anthropic(url).messages.stream(model="claude-haiku-4-5", max_tokens=256,
                                         system=payload["system"],
                                         messages=payload["messages"]) as stream:
        text = "".join(stream.text_stream)
    assert text.split() == FakeUpstream.TEXT.split()


def test_openai_responses_api_goes_through_the_same_way(world):
    url, upstream, _, _ = world
    payload = to_responses(_transcript())
    raw = _openai(url).responses.with_raw_response.create(
        model="gpt-5-mini", instructions=payload["instructions"], input=payload["input"])
    response = raw.parse()
    assert response.output[0].type == "function_call"
    assert response.output[0].name == "book_flight"
    assert raw.headers["x-contextsynth-compaction"] == "compacted"
    got = upstream.received[-1]
    assert got.path == "/v1/responses" and len(got.body["input"]) < len(payload["input"])
    assert got.body["instructions"] == payload["instructions"]
    check_responses(payload, {"instructions": got.body["instructions"],
                              "input": got.body["input"]})


def test_every_step_of_an_agent_carries_one_conversation_key(world):
    url, _, _, _ = world
    run = _transcript()
    steps = [i for i, m in enumerate(run) if m["role"] == "assistant"][-3:]
    keys = {_openai(url).chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=run[:i]).headers[HEADER]  # type: ignore[arg-type]
            for i in steps}
    assert len(keys) == 1 and keys.pop().startswith("cv_")
    payload = to_responses(run)
    responses = _openai(url).responses.with_raw_response.create(
        model="gpt-5-mini", instructions=payload["instructions"], input=payload["input"])
    assert responses.headers[HEADER].startswith("cv_")
    # A key the caller sets (an SDK's default headers) comes back as sent, even with the
    # proxy off, so that an ingress can route every step on it.
    client = openai.OpenAI(base_url=f"{url}/v1", api_key=OPENAI_KEY, max_retries=0,
                           default_headers={HEADER: "agent-7", "x-contextsynth-mode": "off"})
    echoed = client.chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=run)  # type: ignore[arg-type]
    assert echoed.headers[HEADER] == "agent-7"


def test_paths_it_does_not_compact_reach_their_provider_untouched(world):
    url, upstream, _, _ = world
    models = _openai(url).models.list()
    assert [m.id for m in models.data] == ["gpt-4o-mini"]
    assert upstream.received[-1].path == "/v1/models"
    assert upstream.received[-1].headers["authorization"] == f"Bearer {OPENAI_KEY}"
    vectors = _openai(url).embeddings.create(model="text-embedding-3-small", input="hi")
    assert vectors.data[0].embedding == [0.25, -0.5]
    assert upstream.received[-1].body["input"] == "hi"  # the body as the SDK wrote it
    counted = _anthropic(url).messages.count_tokens(
        model="claude-haiku-4-5", messages=[{"role": "user", "content": "hi"}])
    assert counted.input_tokens == 1234
    got = upstream.received[-1]
    assert got.path == "/v1/messages/count_tokens"
    assert (got.headers.get("x-api-key") or got.headers["authorization"].removeprefix(
        "Bearer ")) == ANTHROPIC_KEY  # as the SDK sent it (newer SDKs: a bearer token)
    listed = _anthropic(url).models.list(limit=5)
    assert [m.id for m in listed.data] == ["gpt-4o-mini"]
    assert upstream.received[-1].path == "/v1/models?limit=5"
    assert "anthropic-version" in upstream.received[-1].headers


def test_a_token_count_counts_the_request_as_the_model_would_receive_it(world):
    url, upstream, _, _ = world
    payload = to_anthropic(_transcript())
    raw = _anthropic(url).messages.with_raw_response.count_tokens(
        model="claude-haiku-4-5", system=payload["system"], messages=payload["messages"])
    assert raw.parse().input_tokens == 1234  # the provider's count, passed on
    assert raw.headers["x-contextsynth-counted"] == "compacted"
    assert int(raw.headers["x-contextsynth-tokens-after"]) < \
        int(raw.headers["x-contextsynth-tokens-before"])
    got = upstream.received[-1]
    assert got.path == "/v1/messages/count_tokens"
    check_anthropic(payload, {"system": got.body["system"], "messages": got.body["messages"]})
    assert len(json.dumps(got.body["messages"])) < len(json.dumps(payload["messages"]))
    # The tool the proxy would offer with /v1/messages is counted too.
    assert [t["name"] for t in got.body["tools"]] == ["contextsynth_expand"]
    # With the proxy off for it, the request is counted as it was sent.
    off = _anthropic(url).messages.with_raw_response.count_tokens(
        model="claude-haiku-4-5", system=payload["system"], messages=payload["messages"],
        extra_headers={"x-contextsynth-mode": "off"})
    assert off.headers["x-contextsynth-counted"] == "as-sent"
    assert upstream.received[-1].body["messages"] == payload["messages"]


def test_a_response_continuing_one_the_provider_holds_goes_as_it_came(world):
    url, upstream, _, _ = world
    payload = to_responses(_transcript())
    raw = _openai(url).responses.with_raw_response.create(
        model="gpt-5-mini", previous_response_id="resp_earlier", input=payload["input"])
    assert raw.headers["x-contextsynth-compaction"] == "unchanged"
    assert raw.headers["x-contextsynth-reason"].startswith("previous_response_id")
    assert upstream.received[-1].body["input"] == payload["input"]


def test_a_429_reaches_the_sdk_with_its_retry_after(world):
    url, upstream, _, _ = world
    upstream.script.append(Scripted(429, {"error": {
        "message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}},
        {"retry-after": "7"}))
    with pytest.raises(openai.RateLimitError) as raised:
        _openai(url).chat.completions.create(model="gpt-4o-mini", messages=_transcript())
    assert raised.value.response.headers["retry-after"] == "7"
    upstream.script.append(Scripted(429, {"type": "error", "error": {
        "type": "rate_limit_error", "message": "Slow down"}}, {"retry-after": "3"}))
    payload = to_anthropic(_transcript())
    with pytest.raises(anthropic.RateLimitError) as limited:
        _anthropic(url).messages.create(model="claude-haiku-4-5", max_tokens=16,
                                        messages=payload["messages"])
    assert limited.value.response.headers["retry-after"] == "3"


def test_a_request_compaction_cannot_read_is_forwarded_as_it_came(world):
    url, upstream, _, _ = world
    # A tool result with no call: the provider may take it (or answer its own error);
    # compaction refuses it, and the request goes on unchanged.
    odd = [{"role": "user", "content": "hi"},
           {"role": "tool", "tool_call_id": "nowhere", "content": "orphan"}]
    raw = _openai(url).chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=odd)  # type: ignore[arg-type]
    assert raw.headers["x-contextsynth-compaction"] == "failed"
    assert upstream.received[-1].body["messages"] == odd
    off = _openai(url).chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=_transcript(),  # type: ignore[arg-type]
        extra_headers={"x-contextsynth-mode": "off"})
    assert off.headers["x-contextsynth-compaction"] == "off"
    assert upstream.received[-1].body["messages"] == _transcript()


def test_the_callers_key_is_in_no_log_metric_or_event(world):
    url, upstream, receiver, log = world
    _openai(url).chat.completions.create(model="gpt-4o-mini", messages=_transcript())
    assert upstream.received[-1].headers["authorization"] == f"Bearer {OPENAI_KEY}"
    deadline = time.monotonic() + 15
    while not any(e["type"] == "context.synthesized" for e in receiver.events):
        assert time.monotonic() < deadline, "no context.synthesized event arrived"
        time.sleep(0.05)
    events = receiver.events
    metrics = httpx.get(f"{url}/metrics").text
    assert "contextsynth_proxy_requests_total" in metrics
    logged = log.read_text(errors="replace")
    assert '"endpoint": "/v1/chat/completions"' in logged.replace('":"', '": "')
    for where in (json.dumps(events), metrics, logged):
        assert OPENAI_KEY not in where and ANTHROPIC_KEY not in where


def test_a_client_that_leaves_ends_the_upstream_stream(world):
    url, upstream, _, _ = world
    before = upstream.slow_streams_cut
    body = {"model": "slow", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    with httpx.stream("POST", f"{url}/v1/chat/completions", json=body, timeout=10) as r:
        first = next(r.iter_raw())
        assert first.startswith(b"data:")
    # The client left after one event of fifty: the proxy drops the upstream stream too.
    deadline = time.monotonic() + 10
    while upstream.slow_streams_cut == before:
        assert time.monotonic() < deadline, "the upstream stream was not ended"
        time.sleep(0.05)


def test_a_tenant_with_a_server_side_key_uses_it(tmp_path):
    with FakeUpstream() as upstream:
        env = {"CONTEXTSYNTH_PROXY_OPENAI_URL": f"{upstream.url}/v1",
               "CONTEXTSYNTH_PROXY_TENANT_KEYS": json.dumps({"default": {
                   "openai": "TENANT_OPENAI_KEY"}}),
               "TENANT_OPENAI_KEY": "sk-server-side-71c0"}
        with running_service(env, log=tmp_path / "service.log") as url:
            _openai(url).chat.completions.create(model="gpt-4o-mini", messages=_transcript())
        got = upstream.received[-1]
        assert got.headers["authorization"] == "Bearer sk-server-side-71c0"
        assert OPENAI_KEY not in json.dumps(got.headers)
        logged = (tmp_path / "service.log").read_text()
        assert "sk-server-side-71c0" not in logged and OPENAI_KEY not in logged


def test_contextsynths_own_key_travels_apart_and_stays_here(tmp_path):
    from app.api.auth import hash_key

    with FakeUpstream() as upstream:
        env = {"CONTEXTSYNTH_PROXY_OPENAI_URL": f"{upstream.url}/v1",
               "CONTEXTSYNTH_API_KEYS": json.dumps({hash_key("cs-key-team-a"): "team-a"})}
        with running_service(env, log=tmp_path / "service.log") as url:
            with pytest.raises(openai.AuthenticationError):  # no contextsynth key: a 401
                _openai(url).chat.completions.create(model="gpt-4o-mini",
                                                     messages=_transcript())
            assert upstream.received == []
            client = openai.OpenAI(base_url=f"{url}/v1", api_key=OPENAI_KEY, max_retries=0,
                                   default_headers={"x-contextsynth-key": "cs-key-team-a"})
            client.chat.completions.create(model="gpt-4o-mini", messages=_transcript())
        got = upstream.received[-1]
        assert got.headers["authorization"] == f"Bearer {OPENAI_KEY}"
        assert "cs-key-team-a" not in json.dumps(got.headers)
