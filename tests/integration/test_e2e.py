"""The real service under uvicorn, against a local OpenAI-compatible server, over HTTP."""

import json

import httpx
import pytest

from tests.support.corpus import command_at, load_named
from tests.support.fake_llm import FakeLLM
from tests.support.invariants import check_openai
from tests.support.subprocess_server import running_service
from tests.support.traces import to_actions


@pytest.fixture(scope="module")
def llm():
    with FakeLLM() as server:
        yield server


@pytest.fixture(scope="module")
def service(llm):
    providers = [{"name": "local", "kind": "openai", "base_url": llm.base_url,
                  "model": "fake-1", "api_key_env": "E2E_KEY"}]
    env = {"CONTEXTSYNTH_LLM_PROVIDERS": json.dumps(providers), "E2E_KEY": "sk-e2e"}
    with running_service(env, ready_path="/readyz") as url, \
            httpx.Client(base_url=url, timeout=60) as client:
        yield client


def test_readiness_lists_the_provider(service):
    assert service.get("/readyz").json()["checks"]["llm:local"] == "ok"


def test_deep_synthesis(service, llm):
    messages = load_named("minisweagent-ds-chat-dev-pydicom__pydicom-901")
    before = len(llm.requests)
    r = service.post("/synthesize", json={"messages": messages,
                                          "reasoning": {"synthesis": "deep"}})
    body = r.json()
    assert r.status_code == 200, body
    assert body["mode"] == "deep" and body["llm"]["model"] == "fake-1"
    assert "Goal: fix the bug." in body["messages"][2]["content"]
    check_openai(messages, body["messages"])
    assert len(llm.requests) == before + 1
    assert "<transcript>" in llm.requests[-1]["messages"][1]["content"]


def test_llm_trace_summary(service):
    actions = to_actions(load_named("minisweagent-ds-chat-test-1-100-django__django-11099"))
    body = service.post("/summarize-trace", json={"actions": actions}).json()
    assert body["strategy"] == "llm", body
    assert body["groups"][0]["summary"].startswith("bash (")
    assert body["stats"]["reduction"] > 0.5


def test_history_twice_the_second_is_incremental(service, llm):
    messages = load_named("minisweagent-ds-chat-test-1-100-django__django-13265")
    first = service.post("/compress-history", json={"messages": messages[:150]}).json()
    assert first["compressed"] and first["mode"] == "deep" and not first["incremental"]
    first_prompt = llm.requests[-1]["messages"][1]["content"]
    grown = first["messages"] + messages[150:260]
    second = service.post("/compress-history", json={"messages": grown}).json()
    assert second["compressed"] and second["incremental"]
    prompt = llm.requests[-1]["messages"][1]["content"]
    assert prompt.startswith("Current summary:") and "noted by the fake model" in prompt
    old, new = command_at(messages, 2), command_at(messages, 200)
    assert old in first_prompt and old not in prompt and new in prompt
    check_openai(grown, second["messages"])


def test_rescue(service, llm):
    messages = load_named("tau-airline-gpt4o-task000")
    body = service.post("/rescue", json={"messages": messages,
                                         "question": "Is the booking done?"}).json()
    assert body["answer"].startswith("From the evidence")
    sent = llm.requests[-1]
    assert "tools" not in sent and sent["messages"][0]["role"] == "system"


def test_llm_metrics_are_exposed(service):
    text = service.get("/metrics").text
    assert 'contextsynth_llm_requests_total{model="fake-1",outcome="ok",provider="local"}' in text
    assert "contextsynth_llm_tokens_total" in text
