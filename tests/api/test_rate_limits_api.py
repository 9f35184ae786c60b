"""Rate limits on the HTTP API, in process: who is limited, what a refusal looks like on
a job route (a problem document) and on a proxy route (the provider's own error), the
routes never limited, two apps sharing Redis, and Redis failing under them."""

from __future__ import annotations

import asyncio
import re
import uuid
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from app.adapters.ratelimit import MemoryLimiter
from app.adapters.upstream_memory import MemoryUpstream, UpstreamReply
from app.api.auth import hash_key
from app.main import create_app
from app.settings import Settings
from tests.conftest import serve
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.anyio
SHARED_REDIS = "redis://127.0.0.1:6379/0"
DOOMED_PORT = 6393  # this helper's own redis-server, killed by a test
BODY = {"messages": [{"role": "user", "content": "Fix the failing test in parser.py."}]}
OPENAI = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
ANTHROPIC = {"model": "claude-haiku-4-5", "max_tokens": 64,
             "messages": [{"role": "user", "content": "hi"}]}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def keyed(**tenants: str) -> dict[str, str]:
    """api_keys for {key: tenant}."""
    return {hash_key(key): tenant for key, tenant in tenants.items()}


def bearer(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


def app_with(encoder: Any, *, limiter: Any = None, upstream: Any = None,
             **settings: Any) -> Any:
    return create_app(Settings(**settings), registry=CollectorRegistry(), encoder=encoder,
                      discover=lambda: [], environ={}, limiter=limiter, upstream=upstream)


def answered(_: Any) -> UpstreamReply:
    return UpstreamReply.json({"id": "chatcmpl-1", "object": "chat.completion",
                               "choices": []})


async def test_without_limits_nothing_is_limited_or_added(make_app):
    async with serve(make_app()) as c:
        answers = [await c.post("/synthesize", json=BODY) for _ in range(30)]
    assert {a.status_code for a in answers} == {200}
    assert not any(k.startswith("x-ratelimit") for k in answers[0].headers)


async def test_a_throttled_job_gets_a_429_problem_with_retry_after(encoder):
    clock = Clock()
    app = app_with(encoder, limiter=MemoryLimiter(clock),
                   rate_limit_default={"requests_per_minute": 2})
    async with serve(app) as c:
        first = await c.post("/synthesize", json=BODY)
        second = await c.post("/compress-history", json=BODY)
        third = await c.post("/synthesize", json=BODY)
        clock.now += 30  # one request back
        fourth = await c.post("/synthesize", json=BODY)
        metrics = (await c.get("/metrics")).text
    assert (first.status_code, second.status_code) == (200, 200)
    assert first.headers["x-ratelimit-limit-requests"] == "2"
    assert first.headers["x-ratelimit-remaining-requests"] == "1"
    assert second.headers["x-ratelimit-remaining-requests"] == "0"
    assert third.status_code == 429
    assert third.headers["content-type"] == "application/problem+json"
    assert third.headers["retry-after"] == "30"
    problem = third.json()
    assert problem["type"] == "urn:contextsynth:problem:rate-limited"
    assert problem["status"] == 429 and problem["instance"] == "/synthesize"
    assert problem["limit"] == "requests_per_minute" and problem["limit_value"] == 2
    assert problem["retry_after"] == 30 and "request_id" in problem
    assert "2 requests per minute" in problem["detail"]
    assert fourth.status_code == 200
    assert ('contextsynth_rate_limited_total{limit="requests_per_minute",'
            'route="/synthesize",tenant="default"} 1.0') in metrics
    # The refusal is counted as any answer is.
    assert re.search(r'^contextsynth_requests_total\{.*status="429".*\} 1\.0$', metrics,
                     re.MULTILINE)


async def test_each_tenant_has_its_own_limits_and_the_default_the_rest(encoder):
    app = app_with(encoder, api_keys=keyed(ka="a", kb="b", kc="c"),
                   rate_limits={"a": {"requests_per_minute": 1}, "b": {}},
                   rate_limit_default={"requests_per_minute": 2})
    async with serve(app) as c:
        a = [(await c.post("/synthesize", json=BODY, headers=bearer("ka"))).status_code
             for _ in range(2)]
        b = [(await c.post("/synthesize", json=BODY, headers=bearer("kb"))).status_code
             for _ in range(5)]
        c_ = [(await c.post("/synthesize", json=BODY, headers=bearer("kc"))).status_code
              for _ in range(3)]
        # A wrong key is a 401, and counts against nobody.
        wrong = await c.post("/synthesize", json=BODY, headers=bearer("nope"))
    assert a == [200, 429] and b == [200] * 5 and c_ == [200, 200, 429]
    assert wrong.status_code == 401


async def test_every_route_of_a_tenant_draws_but_health_and_metrics_never(encoder):
    app = app_with(encoder, rate_limit_default={"requests_per_minute": 1})
    async with serve(app) as c:
        assert (await c.get("/expand/cs_00000000000000000000")).status_code == 404
        expand = await c.get("/expand/cs_00000000000000000000")
        receipt = await c.get("/v1/contextsynth/receipts/nope")
        job = await c.post("/synthesize", json=BODY)
        ops = [(await c.get(path)).status_code
               for path in ("/healthz", "/readyz", "/metrics") for _ in range(5)]
    assert expand.status_code == receipt.status_code == job.status_code == 429
    assert expand.json()["instance"] == "/expand/cs_00000000000000000000"
    assert ops == [200] * 15


async def test_a_passed_through_call_draws_a_request(encoder):
    upstream = MemoryUpstream(lambda _: UpstreamReply.json({"object": "list", "data": []}))
    app = app_with(encoder, upstream=upstream,
                   rate_limit_default={"requests_per_minute": 1, "tokens_per_minute": 10})
    async with serve(app) as c:
        first = await c.get("/v1/models")
        second = await c.get("/v1/models")
    assert first.status_code == 200 and second.status_code == 429
    assert second.headers["retry-after"] == "60" and len(upstream.sent) == 1
    assert second.json()["error"]["code"] == "rate_limit_exceeded"  # OpenAI's, as it went


async def test_a_throttled_gemini_call_gets_geminis_error(encoder):
    upstream = MemoryUpstream(lambda _: UpstreamReply.json({"candidates": []}))
    app = app_with(encoder, upstream=upstream, rate_limit_default={"requests_per_minute": 1})
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    path = "/v1beta/models/gemini-2.5-flash:generateContent"
    async with serve(app) as c:
        first = await c.post(path, json=body, headers={"x-goog-api-key": "g-key"})
        second = await c.post(path, json=body, headers={"x-goog-api-key": "g-key"})
    assert first.status_code == 200 and second.status_code == 429
    assert second.json()["error"]["status"] == "RESOURCE_EXHAUSTED"
    assert second.json()["error"]["code"] == 429
    assert "g-key" not in second.text


async def test_a_request_over_a_full_token_bucket_is_a_413(encoder):
    app = app_with(encoder, rate_limit_default={"requests_per_minute": 5,
                                                "tokens_per_minute": 50})
    big = {"messages": [{"role": "user", "content": "word " * 100}]}
    async with serve(app) as c:
        r = await c.post("/synthesize", json=big)
        small = await c.post("/synthesize", json=BODY)
    assert r.status_code == 413 and "retry-after" not in r.headers
    problem = r.json()
    assert problem["type"] == "urn:contextsynth:problem:too-many-tokens"
    assert problem["limit"] == "tokens_per_minute" and problem["limit_value"] == 50
    assert problem["tokens"] > 100
    assert small.status_code == 200
    assert small.headers["x-ratelimit-remaining-requests"] == "4"  # the 413 drew nothing


async def test_tokens_are_what_the_tenant_sends_before_compaction(encoder):
    clock = Clock()
    long_run = {"messages": [{"role": "user", "content": "Fix the bug."}] + [
        m for i in range(40) for m in (
            {"role": "assistant", "content": f"Step {i}: reading file_{i}.py " + "x " * 200},
            {"role": "user", "content": f"Output of step {i}: " + "line\n" * 100})]}
    app = app_with(encoder, limiter=MemoryLimiter(clock),
                   rate_limit_default={"tokens_per_minute": 1_000_000})
    async with serve(app) as c:
        r = await c.post("/synthesize", json=long_run)
    assert r.status_code == 200
    stats = r.json()["stats"]
    drawn = 1_000_000 - int(r.headers["x-ratelimit-remaining-tokens"])
    assert stats["tokens_after"] < stats["tokens_before"]
    # Every text the tenant sent, as the job counted it before compaction (less the
    # few tokens per message the job adds for its framing), not what compaction left.
    n = len(long_run["messages"])
    assert stats["tokens_before"] - 4 * n <= drawn <= stats["tokens_before"]
    assert drawn > stats["tokens_after"] + 3000


async def test_a_throttled_proxy_call_gets_the_providers_own_error(encoder):
    upstream = MemoryUpstream(answered)
    app = app_with(encoder, upstream=upstream, api_keys=keyed(ko="o", ka="a"),
                   rate_limit_default={"requests_per_minute": 1})
    openai_key = {"x-contextsynth-key": "ko", "authorization": "Bearer sk-x"}
    anthropic_key = {"x-contextsynth-key": "ka", "x-api-key": "sk-ant-x",
                     "anthropic-version": "2023-06-01"}
    async with serve(app) as c:
        ok = await c.post("/v1/chat/completions", json=OPENAI, headers=openai_key)
        openai = await c.post("/v1/chat/completions", json=OPENAI, headers=openai_key)
        await c.post("/v1/messages", json=ANTHROPIC, headers=anthropic_key)
        anthropic = await c.post("/v1/messages", json=ANTHROPIC, headers=anthropic_key)
    assert ok.status_code == 200 and len(upstream.sent) == 2  # the refused never went
    assert openai.status_code == anthropic.status_code == 429
    assert openai.headers["retry-after"] == anthropic.headers["retry-after"] == "60"
    assert openai.headers["content-type"] == "application/json"
    error = openai.json()["error"]
    assert (error["type"], error["code"]) == ("requests", "rate_limit_exceeded")
    assert "1 requests per minute" in error["message"]
    assert openai.headers["x-ratelimit-remaining-requests"] == "0"
    body = anthropic.json()
    assert body["type"] == "error" and body["error"]["type"] == "rate_limit_error"
    assert "Retry in 60 s" in body["error"]["message"]


async def test_proxy_tokens_are_drawn_and_too_many_is_the_providers_413(encoder):
    upstream = MemoryUpstream(answered)
    app = app_with(encoder, upstream=upstream,
                   rate_limit_default={"tokens_per_minute": 100})
    big = {**ANTHROPIC, "messages": [{"role": "user", "content": "word " * 200}]}
    medium = {**OPENAI, "messages": [{"role": "user", "content": "word " * 60}]}
    headers = {"anthropic-version": "2023-06-01"}
    async with serve(app) as c:
        too_many = await c.post("/v1/messages", json=big, headers=headers)
        first = await c.post("/v1/chat/completions", json=medium)
        second = await c.post("/v1/chat/completions", json=medium)
        # A count sends nothing to the model: no tokens drawn, the bucket is empty anyway.
        counted = await c.post("/v1/messages/count_tokens", json=big, headers=headers)
    assert too_many.status_code == 413
    assert too_many.json()["error"]["type"] == "request_too_large"
    assert first.status_code == 200 and second.status_code == 429
    assert second.json()["error"]["type"] == "tokens"
    assert counted.status_code == 200


async def test_two_apps_sharing_redis_share_the_limit(encoder):
    tenant = f"t-{uuid.uuid4().hex[:8]}"  # buckets no other run has touched
    settings = {"redis_url": SHARED_REDIS, "api_keys": keyed(k=tenant),
                "rate_limits": {tenant: {"requests_per_minute": 3}}}
    one, two = app_with(encoder, **settings), app_with(encoder, **settings)
    async with serve(one) as a, serve(two) as b:
        codes = [(await c.post("/synthesize", json=BODY, headers=bearer("k"))).status_code
                 for c in (a, b, a, b)]
    assert codes == [200, 200, 200, 429]


async def test_redis_failing_mid_flight_serves_unchecked_and_counts_it(encoder):
    server = RedisServer()
    server.port = DOOMED_PORT
    with server:
        app = app_with(encoder, redis_url=server.url, redis_timeout_s=0.2, redis_pause_s=0.2,
                       rate_limit_default={"requests_per_minute": 1})
        async with serve(app) as c:
            assert (await c.post("/synthesize", json=BODY)).status_code == 200
            assert (await c.post("/synthesize", json=BODY)).status_code == 429
            server.kill()
            down = [(await c.post("/synthesize", json=BODY)).status_code for _ in range(3)]
            unchecked = (await c.get("/metrics")).text
            server.start()  # empty: the bucket starts full
            await asyncio.sleep(0.3)  # past the pause
            back = [(await c.post("/synthesize", json=BODY)).status_code for _ in range(2)]
    assert down == [200, 200, 200]
    assert "contextsynth_rate_limit_unchecked_total 3.0" in unchecked
    assert back == [200, 429]
