"""Rate limits end to end: two ``contextsynth serve`` processes sharing one Redis (a
redis-server of this test's own) hold a tenant to one limit between them, and the
providers' SDKs, pointed at the proxy, raise their own RateLimitError when it refuses."""

from __future__ import annotations

import json
from collections.abc import Iterator

import anthropic
import httpx
import openai
import pytest

from app.api.auth import hash_key
from tests.support.fake_upstream import FakeUpstream
from tests.support.redis_server import RedisServer
from tests.support.subprocess_server import running_service

REDIS_PORT = 6392  # this helper's own
BODY = {"messages": [{"role": "user", "content": "Fix the failing test in parser.py."}]}
KEYS = {"k-agents": "agents", "k-openai": "sdk-openai", "k-anthropic": "sdk-anthropic"}
LIMITS = {"agents": {"requests_per_minute": 4},
          "sdk-openai": {"requests_per_minute": 1},
          "sdk-anthropic": {"requests_per_minute": 5, "tokens_per_minute": 300}}


@pytest.fixture(scope="module")
def replicas() -> Iterator[tuple[str, str, FakeUpstream]]:
    server = RedisServer()
    server.port = REDIS_PORT
    with server, FakeUpstream() as upstream:
        env = {"CONTEXTSYNTH_REDIS_URL": server.url,
               "CONTEXTSYNTH_API_KEYS": json.dumps({hash_key(k): t for k, t in KEYS.items()}),
               "CONTEXTSYNTH_RATE_LIMITS": json.dumps(LIMITS),
               "CONTEXTSYNTH_PROXY_OPENAI_URL": f"{upstream.url}/v1",
               "CONTEXTSYNTH_PROXY_ANTHROPIC_URL": upstream.url}
        with running_service(env) as one, running_service(env) as two:
            yield one, two, upstream


def test_two_replicas_hold_a_tenant_to_one_shared_limit(replicas):
    one, two, _ = replicas
    headers = {"authorization": "Bearer k-agents"}
    answers = [httpx.post(f"{url}/synthesize", json=BODY, headers=headers, timeout=30)
               for url in (one, two, one, two, one)]
    assert [a.status_code for a in answers] == [200, 200, 200, 200, 429]
    # Each replica saw what the other drew.
    assert [a.headers["x-ratelimit-remaining-requests"] for a in answers[:4]] == \
        ["3", "2", "1", "0"]
    refused = answers[4]
    assert refused.headers["content-type"] == "application/problem+json"
    # 4 a minute: one every 15 s, less the time the four took (counted by Redis's clock).
    wait = int(refused.headers["retry-after"])
    assert 10 <= wait <= 15
    problem = refused.json()
    assert problem["type"] == "urn:contextsynth:problem:rate-limited"
    assert problem["limit"] == "requests_per_minute" and problem["limit_value"] == 4
    assert problem["retry_after"] == wait
    # Health and metrics are never limited; the refusal is counted on the replica.
    assert httpx.get(f"{one}/healthz").status_code == 200
    metrics = httpx.get(f"{one}/metrics").text
    assert ('contextsynth_rate_limited_total{limit="requests_per_minute",'
            'route="/synthesize",tenant="agents"} 1.0') in metrics


def test_the_openai_sdk_raises_its_rate_limit_error(replicas):
    one, two, upstream = replicas
    clients = [openai.OpenAI(base_url=f"{url}/v1", api_key="sk-caller", max_retries=0,
                             default_headers={"x-contextsynth-key": "k-openai"})
               for url in (one, two)]
    sent = len(upstream.received)
    clients[0].chat.completions.create(model="gpt-4o-mini",
                                       messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(openai.RateLimitError) as caught:
        clients[1].chat.completions.create(model="gpt-4o-mini",
                                           messages=[{"role": "user", "content": "hi"}])
    error = caught.value
    assert error.status_code == 429 and error.code == "rate_limit_exceeded"
    assert error.type == "requests" and "1 requests per minute" in error.message
    assert error.response.headers["retry-after"] == "60"
    assert len(upstream.received) == sent + 1  # the refused call never went upstream


def test_the_anthropic_sdk_raises_its_rate_limit_and_too_large_errors(replicas):
    one, two, _ = replicas
    clients = [anthropic.Anthropic(base_url=url, api_key="sk-ant-caller", max_retries=0,
                                   default_headers={"x-contextsynth-key": "k-anthropic"})
               for url in (one, two)]
    words = "word " * 180  # about 180 tokens of the 300 a minute
    clients[0].messages.create(model="claude-haiku-4-5", max_tokens=64,
                               messages=[{"role": "user", "content": words}])
    with pytest.raises(anthropic.RateLimitError) as caught:
        clients[1].messages.create(model="claude-haiku-4-5", max_tokens=64,
                                   messages=[{"role": "user", "content": words}])
    error = caught.value
    assert error.status_code == 429
    assert error.body["error"]["type"] == "rate_limit_error"  # type: ignore[index]
    assert "tokens_per_minute" in error.message
    assert int(error.response.headers["retry-after"]) >= 1
    # More than the bucket holds even full: a 413 the SDK does not retry.
    with pytest.raises(anthropic.RequestTooLargeError) as too_large:
        clients[1].messages.create(model="claude-haiku-4-5", max_tokens=64,
                                   messages=[{"role": "user", "content": words * 2}])
    assert too_large.value.status_code == 413
