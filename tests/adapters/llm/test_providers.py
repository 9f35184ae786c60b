"""Providers at the HTTP boundary (respx), with realistic OpenAI and Anthropic bodies."""

import asyncio
import json

import httpx
import pytest
import respx
from prometheus_client import CollectorRegistry

from app.adapters.llm.base import (
    CircuitOpen,
    CompletionRequest,
    LLMBadResponse,
    LLMRateLimited,
    LLMRejected,
    LLMServerError,
    LLMTimeout,
)
from app.adapters.llm.client import LLMClient
from app.adapters.llm.config import ProviderConfig
from app.adapters.llm.registry import build_providers
from app.adapters.llm.resilience import RetryPolicy
from app.adapters.metrics import Metrics
from app.engine.errors import InvalidOption
from app.engine.prompts import PromptMessage

pytestmark = pytest.mark.anyio

OPENAI_URL = "https://llm.test/v1/chat/completions"
ANTHROPIC_URL = "https://claude.test/v1/messages"
OPENAI_OK = {
    "id": "chatcmpl-9x", "object": "chat.completion", "created": 1732262400,
    "model": "gpt-4o-mini-2024-07-18",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "State: tests pass.",
                                         "refusal": None},
                 "logprobs": None, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 812, "completion_tokens": 96, "total_tokens": 908,
              "prompt_tokens_details": {"cached_tokens": 0}},
    "system_fingerprint": "fp_0ba0d124f1",
}
ANTHROPIC_OK = {
    "id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant",
    "model": "claude-3-5-haiku-20241022",
    "content": [{"type": "text", "text": "State: tests pass."}],
    "stop_reason": "end_turn", "stop_sequence": None,
    "usage": {"input_tokens": 512, "output_tokens": 64},
}
RATE_LIMITED = {"error": {"message": "Rate limit reached for gpt-4o-mini in organization "
                          "org-x on requests per min (RPM): Limit 500, Used 500.",
                          "type": "requests", "param": None, "code": "rate_limit_exceeded"}}
SERVER_ERROR = {"error": {"message": "The server had an error while processing your request.",
                          "type": "server_error", "param": None, "code": None}}
OVERLOADED = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
ANTHROPIC_RATE_LIMITED = {"type": "error", "error": {
    "type": "rate_limit_error",
    "message": "Number of request tokens has exceeded your per-minute rate limit"}}
ANTHROPIC_SERVER_ERROR = {"type": "error", "error": {"type": "api_error",
                                                     "message": "Internal server error"}}
# provider name -> (url, ok body, rate-limited body, server-error body, empty-completion body)
PROVIDERS = {
    "main": (OPENAI_URL, OPENAI_OK, RATE_LIMITED, SERVER_ERROR,
             {**OPENAI_OK, "choices": [{"index": 0, "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": ""}}]}),
    "claude": (ANTHROPIC_URL, ANTHROPIC_OK, ANTHROPIC_RATE_LIMITED, ANTHROPIC_SERVER_ERROR,
               {**ANTHROPIC_OK, "content": []}),
}
REQUEST = CompletionRequest([PromptMessage("system", "Summarize."),
                             PromptMessage("user", "<transcript>...</transcript>")])


class Sleeps:
    def __init__(self):
        self.delays = []

    async def __call__(self, seconds):
        self.delays.append(seconds)


def config(**extra):
    base = {"name": "main", "kind": "openai", "base_url": "https://llm.test/v1",
            "model": "gpt-4o-mini", "api_key": "sk-test-secret"}
    return ProviderConfig(**{**base, **extra})


@pytest.fixture
def metrics():
    return Metrics(CollectorRegistry())


@pytest.fixture
async def client(metrics):
    sleeps = Sleeps()
    providers = build_providers([
        config(),
        config(name="claude", kind="anthropic", base_url="https://claude.test",
               model="claude-3-5-haiku-latest", api_key=None, api_key_env="TEST_KEY"),
    ], {"TEST_KEY": "sk-ant-secret"})
    llm = LLMClient(providers, metrics, policy=RetryPolicy(attempts=3), budget_s=5,
                    sleep=sleeps)
    llm.sleeps = sleeps
    await llm.start()
    yield llm
    await llm.aclose()


@respx.mock
async def test_openai_success_records_usage(client, metrics):
    route = respx.post(OPENAI_URL).respond(200, json=OPENAI_OK)
    result = await client.complete(REQUEST, "main")
    assert result.text == "State: tests pass."
    assert (result.usage.input_tokens, result.usage.output_tokens) == (812, 96)
    sent = route.calls.last.request
    assert sent.headers["authorization"] == "Bearer sk-test-secret"
    body = json.loads(sent.content)
    assert body["model"] == "gpt-4o-mini" and body["messages"][0]["role"] == "system"
    assert metrics.registry.get_sample_value(
        "contextsynth_llm_tokens_total",
        {"provider": "main", "model": "gpt-4o-mini", "direction": "in"}) == 812


@respx.mock
async def test_anthropic_success_puts_system_on_top(client):
    route = respx.post(ANTHROPIC_URL).respond(200, json=ANTHROPIC_OK)
    result = await client.complete(REQUEST, "claude")
    assert result.text == "State: tests pass." and result.usage.output_tokens == 64
    sent = route.calls.last.request
    assert sent.headers["x-api-key"] == "sk-ant-secret"
    assert sent.headers["anthropic-version"] == "2023-06-01"
    body = json.loads(sent.content)
    assert body["system"] == "Summarize."
    assert [m["role"] for m in body["messages"]] == ["user"]


@respx.mock
async def test_each_provider_says_when_it_stopped_at_the_token_limit(client):
    length = {**OPENAI_OK, "choices": [{**OPENAI_OK["choices"][0], "finish_reason": "length"}]}
    respx.post(OPENAI_URL).mock(side_effect=[httpx.Response(200, json=OPENAI_OK),
                                             httpx.Response(200, json=length)])
    respx.post(ANTHROPIC_URL).mock(side_effect=[
        httpx.Response(200, json=ANTHROPIC_OK),
        httpx.Response(200, json={**ANTHROPIC_OK, "stop_reason": "max_tokens"})])
    cut = [(await client.complete(REQUEST, name)).cut
           for name in ("main", "main", "claude", "claude")]
    assert cut == [False, True, False, True]


@pytest.mark.parametrize("name", PROVIDERS)
@respx.mock
async def test_429_waits_as_retry_after_says(client, name):
    url, ok, limited, _, _ = PROVIDERS[name]
    route = respx.post(url).mock(side_effect=[
        httpx.Response(429, json=limited, headers={"retry-after": "2"}),
        httpx.Response(200, json=ok),
    ])
    assert (await client.complete(REQUEST, name)).text
    assert route.call_count == 2 and client.sleeps.delays == [2.0]


@respx.mock
async def test_retry_after_beyond_the_limit_is_not_waited_for(client):
    respx.post(OPENAI_URL).respond(429, json=RATE_LIMITED, headers={"retry-after": "3600"})
    with pytest.raises(LLMRateLimited):
        await client.complete(REQUEST, "main")
    assert client.sleeps.delays == []


@pytest.mark.parametrize("name", PROVIDERS)
@respx.mock
async def test_500_is_retried_with_backoff_then_reported(client, metrics, name):
    url, _, _, failed, _ = PROVIDERS[name]
    route = respx.post(url).respond(500, json=failed)
    with pytest.raises(LLMServerError, match="500"):
        await client.complete(REQUEST, name)
    assert route.call_count == 3
    assert len(client.sleeps.delays) == 2 and client.sleeps.delays[1] > client.sleeps.delays[0]
    model = "gpt-4o-mini" if name == "main" else "claude-3-5-haiku-latest"
    assert metrics.registry.get_sample_value(
        "contextsynth_llm_requests_total",
        {"provider": name, "model": model, "outcome": "server_error"}) == 1


@respx.mock
async def test_anthropic_overloaded_529_is_retried(client):
    respx.post(ANTHROPIC_URL).mock(side_effect=[httpx.Response(529, json=OVERLOADED),
                                                httpx.Response(200, json=ANTHROPIC_OK)])
    assert (await client.complete(REQUEST, "claude")).text


@pytest.mark.parametrize("name", PROVIDERS)
@respx.mock
async def test_timeout(client, name):
    route = respx.post(PROVIDERS[name][0]).mock(side_effect=httpx.ReadTimeout("slow"))
    with pytest.raises(LLMTimeout, match="did not answer"):
        await client.complete(REQUEST, name)
    assert route.call_count == 3


@pytest.mark.parametrize("name", PROVIDERS)
@respx.mock
async def test_malformed_json_is_not_retried(client, name):
    route = respx.post(PROVIDERS[name][0]).respond(200, text="<html>Bad gateway</html>")
    with pytest.raises(LLMBadResponse, match="not JSON"):
        await client.complete(REQUEST, name)
    assert route.call_count == 1


@pytest.mark.parametrize("name", PROVIDERS)
@respx.mock
async def test_empty_completion_of_each_provider(client, name):
    url, *_, empty = PROVIDERS[name]
    respx.post(url).respond(200, json=empty)
    with pytest.raises(LLMBadResponse, match="empty"):
        await client.complete(REQUEST, name)


@pytest.mark.parametrize("content", ["", "   ", None])
@respx.mock
async def test_empty_completion(client, content):
    body = json.loads(json.dumps(OPENAI_OK))
    body["choices"][0]["message"]["content"] = content
    respx.post(OPENAI_URL).respond(200, json=body)
    with pytest.raises(LLMBadResponse, match="empty"):
        await client.complete(REQUEST, "main")


@respx.mock
async def test_rejected_request_is_not_retried_and_keeps_the_key_secret(client):
    respx.post(OPENAI_URL).respond(401, json={"error": {"message": "Incorrect API key"}})
    with pytest.raises(LLMRejected) as err:
        await client.complete(REQUEST, "main")
    assert "sk-test-secret" not in err.value.detail
    assert not client.breaker("main").open


@respx.mock
async def test_breaker_opens_after_repeated_failures_and_lets_one_through_later(metrics):
    now = [0.0]
    providers = build_providers([config()], {})
    llm = LLMClient(providers, metrics, policy=RetryPolicy(attempts=1), sleep=Sleeps(),
                    clock=lambda: now[0])
    await llm.start()
    route = respx.post(OPENAI_URL).respond(500, json=SERVER_ERROR)
    for _ in range(5):
        with pytest.raises(LLMServerError):
            await llm.complete(REQUEST, None)
    with pytest.raises(CircuitOpen):
        await llm.complete(REQUEST, None)
    assert route.call_count == 5
    now[0] = 31.0
    route.respond(200, json=OPENAI_OK)
    assert (await llm.complete(REQUEST, None)).text
    assert not llm.breaker("main").open
    await llm.aclose()


@respx.mock
async def test_budget_bounds_the_whole_call(metrics):
    async def slow(request):
        await asyncio.sleep(1)
        return httpx.Response(200, json=OPENAI_OK)

    llm = LLMClient(build_providers([config()], {}), metrics, budget_s=0.05)
    await llm.start()
    respx.post(OPENAI_URL).mock(side_effect=slow)
    with pytest.raises(LLMTimeout, match="budget"):
        await llm.complete(REQUEST, None)
    await llm.aclose()


@respx.mock
async def test_a_provider_hung_past_the_budget_opens_the_breaker(metrics):
    async def hung(request):
        await asyncio.sleep(10)
        return httpx.Response(200, json=OPENAI_OK)

    llm = LLMClient(build_providers([config()], {}), metrics, budget_s=0.02)
    await llm.start()
    respx.post(OPENAI_URL).mock(side_effect=hung)
    for _ in range(5):
        with pytest.raises(LLMTimeout):
            await llm.complete(REQUEST, None)
    with pytest.raises(CircuitOpen):  # no sixth wait: the caller falls back at once
        await llm.complete(REQUEST, None)
    await llm.aclose()


def test_default_timeouts_give_a_fallback_in_seconds():
    from app.settings import Settings

    settings = Settings()
    assert settings.llm_budget_s <= 30 and config().timeout_s < settings.llm_budget_s


async def test_unknown_provider_is_named(client):
    with pytest.raises(InvalidOption, match="main, claude"):
        await client.complete(REQUEST, "gemini")


def test_key_from_a_mounted_file(tmp_path):
    secret = tmp_path / "key"
    secret.write_text("sk-file\n")
    assert config(api_key=None, api_key_file=str(secret)).resolve_key({}) == "sk-file"
