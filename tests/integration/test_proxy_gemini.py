"""Proxy mode for Gemini end to end: the official google-genai SDK, pointed at a real
``contextsynth serve`` by its base URL and nothing else, against a fake Gemini API over
loopback (a host of its own, beside the fake OpenAI and Anthropic) that records what
it received."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from google import genai
from google.genai import errors, types

from app.corpus import CORPUS_DIR, load
from tests.support.convert import to_gemini
from tests.support.fake_gemini import MODEL, FakeGemini
from tests.support.fake_upstream import FakeUpstream, Scripted
from tests.support.invariants import check_gemini
from tests.support.subprocess_server import running_service

GEMINI_KEY = "AIza-caller-gemini-4c7e19"
OPENAI_KEY = "sk-caller-openai-5f3a9c"


def _transcript() -> dict[str, Any]:
    """A real support-agent run, cut where the agent is about to answer, as Gemini
    contents and a system instruction."""
    messages = load(CORPUS_DIR / "tau-airline-gpt4o-task002-trial1.jsonl")
    last = max(i for i, m in enumerate(messages) if m["role"] == "assistant")
    return to_gemini(messages[:last])


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory,
          ) -> Iterator[tuple[str, FakeGemini, FakeUpstream, Path]]:
    log = tmp_path_factory.mktemp("proxy-gemini") / "service.log"
    with FakeGemini() as gemini, FakeUpstream() as others:
        env = {"CONTEXTSYNTH_PROXY_GEMINI_URL": gemini.url,
               "CONTEXTSYNTH_PROXY_OPENAI_URL": f"{others.url}/v1",
               "CONTEXTSYNTH_PROXY_ANTHROPIC_URL": others.url,
               "CONTEXTSYNTH_LOG_LEVEL": "info"}
        with running_service(env, log=log) as url:
            yield url, gemini, others, log


def _client(url: str, version: str = "v1",
            headers: dict[str, str] | None = None) -> genai.Client:
    """google-genai on the service. Its default version is v1 (v1beta before 2.x and in
    the REST reference): named here, so that each test knows its path whatever the
    SDK's version. No retries: a 429 reaches the test as the SDK first saw it."""
    options = types.HttpOptions(base_url=url, api_version=version, headers=headers,
                                retry_options=types.HttpRetryOptions(attempts=1))
    return genai.Client(api_key=GEMINI_KEY, http_options=options)


def _config(payload: dict[str, Any]) -> types.GenerateContentConfig:
    return types.GenerateContentConfig(
        system_instruction=payload["systemInstruction"]["parts"][0]["text"],
        temperature=0.2, max_output_tokens=256)


def _as_sent(url: str, gemini: FakeGemini, payload: dict[str, Any]) -> dict[str, Any]:
    """The request body as the SDK writes it, read where the proxy is off."""
    client = _client(url, headers={"x-contextsynth-mode": "off"})
    client.models.generate_content(model=MODEL, contents=payload["contents"],
                                   config=_config(payload))
    return gemini.received[-1].body


def test_the_gemini_sdk_gets_the_answer_to_a_compacted_request(world):
    url, gemini, _, _ = world
    payload = _transcript()
    sent = _as_sent(url, gemini, payload)
    assert len(sent["contents"]) == len(payload["contents"])  # off: untouched
    client = _client(url)
    response = client.models.generate_content(model=MODEL, contents=payload["contents"],
                                              config=_config(payload))
    # The provider's answer, typed by the SDK: the function call round-trips.
    [call] = response.function_calls or []
    assert (call.name, call.args) == ("book_flight", {"flight": "HAT069"})
    assert response.response_id == FakeGemini.RESPONSE_ID
    assert response.usage_metadata is not None
    assert response.usage_metadata.prompt_token_count == 100
    headers = response.sdk_http_response.headers if response.sdk_http_response else None
    assert headers is not None and headers["x-contextsynth-compaction"] == "compacted"
    before, after = (int(headers[f"x-contextsynth-tokens-{w}"]) for w in ("before", "after"))
    assert after < before
    got = gemini.received[-1]
    # The model stays in the path.
    assert got.path == f"/v1/models/{MODEL}:generateContent"
    assert got.headers["x-goog-api-key"] == GEMINI_KEY  # as the SDK sent it
    assert got.headers["x-goog-api-client"].startswith("google-genai-sdk/")
    assert not any(k.startswith("x-contextsynth-") for k in got.headers)
    # Only the conversation changed, and the expand tool was declared (something was
    # cut): the rest of the request is the SDK's own.
    assert {k: v for k, v in got.body.items() if k not in ("contents", "tools")} == \
        {k: v for k, v in sent.items() if k != "contents"}
    assert "tools" not in sent
    assert [f["name"] for t in got.body["tools"] for f in t["functionDeclarations"]] == \
        ["contextsynth_expand"]
    assert len(got.body["contents"]) < len(sent["contents"])
    check_gemini(sent, got.body)
    assert len(json.dumps(got.body)) < len(json.dumps(sent))
    # What was dropped, by this service's id for the request (in x-request-id: Gemini
    # sends no request id of its own to keep there).
    rid = headers["x-request-id"]
    receipt = httpx.get(f"{url}/v1/contextsynth/receipts/{rid}").json()
    assert receipt["tokens_before"] == before and receipt["receipt"]["dropped"]


def test_a_streamed_gemini_answer_comes_back_event_by_event(world):
    url, gemini, _, _ = world
    payload = _transcript()
    sent = _as_sent(url, gemini, payload)
    client = _client(url)
    chunks = list(client.models.generate_content_stream(
        model=MODEL, contents=payload["contents"], config=_config(payload)))
    assert "".join(c.text or "" for c in chunks) == FakeGemini.TEXT
    assert len(chunks) == len(FakeGemini.TEXT.split(" "))  # one per event, as sent
    assert chunks[-1].candidates and chunks[-1].candidates[0].finish_reason == "STOP"
    got = gemini.received[-1]
    assert got.path == f"/v1/models/{MODEL}:streamGenerateContent?alt=sse"
    assert len(got.body["contents"]) < len(sent["contents"])
    check_gemini(sent, got.body)


def test_v1beta_and_a_key_in_the_query_go_through_the_same_way(world):
    url, gemini, _, log = world
    payload = _transcript()
    client = _client(url, version="v1beta")
    response = client.models.generate_content(model=MODEL, contents=payload["contents"],
                                              config=_config(payload))
    assert response.function_calls and response.function_calls[0].name == "book_flight"
    got = gemini.received[-1]
    assert got.path == f"/v1beta/models/{MODEL}:generateContent"
    assert len(got.body["contents"]) < len(payload["contents"])
    # The REST reference's way: the key in the query, forwarded as it came, streamed.
    r = httpx.post(f"{url}/v1beta/models/{MODEL}:streamGenerateContent",
                   params={"alt": "sse", "key": GEMINI_KEY}, json=payload, timeout=30)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    assert r.headers["x-contextsynth-compaction"] == "compacted"
    assert r.text.count("data: ") == len(FakeGemini.TEXT.split(" "))
    got = gemini.received[-1]
    assert got.path == f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse&key={GEMINI_KEY}"
    assert "x-goog-api-key" not in got.headers
    # The access line names the provider and the model (from the path), never the key.
    lines = [json.loads(line) for line in log.read_text().splitlines()
             if line.startswith("{") and '"app.access"' in line]
    proxied = [line for line in lines if line.get("upstream") == "gemini"
               and line["mode"] != "off"]  # off reads no body, and names no model
    assert proxied and all(line["model"] == MODEL for line in proxied)
    assert {line["endpoint"] for line in proxied} >= {
        "/v1/models/{model}:generateContent", "/v1beta/models/{model}:generateContent"}
    assert GEMINI_KEY not in log.read_text(errors="replace")
    assert GEMINI_KEY not in httpx.get(f"{url}/metrics").text


def test_model_lists_and_other_gemini_paths_reach_gemini_untouched(world):
    url, gemini, others, _ = world
    for version in ("v1", "v1beta"):
        client = _client(url, version=version)
        assert [m.name for m in client.models.list()] == [f"models/{MODEL}"]
        got = gemini.received[-1]
        assert got.path.split("?")[0] == f"/{version}/models"  # Gemini's host, not OpenAI's
        assert got.headers["x-goog-api-key"] == GEMINI_KEY
    client = _client(url, version="v1beta")
    counted = client.models.count_tokens(model=MODEL, contents="How many tokens is this?")
    assert counted.total_tokens == 31
    got = gemini.received[-1]
    assert got.path == f"/v1beta/models/{MODEL}:countTokens"
    assert got.body["contents"] == [{"parts": [{"text": "How many tokens is this?"}],
                                     "role": "user"}]  # the body as the SDK wrote it
    client = _client(url)
    embedded = client.models.embed_content(model="gemini-embedding-001", contents="hi")
    assert embedded.embeddings and embedded.embeddings[0].values == [0.25, -0.5]
    assert gemini.received[-1].path == "/v1/models/gemini-embedding-001:batchEmbedContents"
    # The OpenAI SDK's /v1/models, on the same prefix, still reaches OpenAI.
    heard = len(gemini.received)
    listed = openai.OpenAI(base_url=f"{url}/v1", api_key=OPENAI_KEY,
                           max_retries=0).models.list()
    assert [m.id for m in listed.data] == ["gpt-4o-mini"]
    assert others.received[-1].path == "/v1/models"
    assert len(gemini.received) == heard


def test_a_gemini_error_reaches_the_sdk_as_gemini_sent_it(world):
    url, gemini, _, _ = world
    exhausted = {"error": {"code": 429, "message": "Resource has been exhausted (e.g. "
                           "check quota).", "status": "RESOURCE_EXHAUSTED"}}
    gemini.script.append(Scripted(429, exhausted, {"retry-after": "7"}))
    payload = _transcript()
    client = _client(url)
    with pytest.raises(errors.ClientError) as raised:
        client.models.generate_content(model=MODEL, contents=payload["contents"],
                                       config=_config(payload))
    assert raised.value.code == 429 and raised.value.status == "RESOURCE_EXHAUSTED"
    assert raised.value.response is not None
    assert raised.value.response.headers["retry-after"] == "7"
