"""The rate limits' policy: whose limits apply, what a request's tokens are, and what a
refusal says, over the in-process limiter on a clock the test moves."""

from __future__ import annotations

import json

import pytest
import tiktoken
from prometheus_client import CollectorRegistry

from app.adapters.metrics import Metrics
from app.adapters.ratelimit import MemoryLimiter
from app.adapters.tokenizer import pretokenizer
from app.engine.transcript.tokens import TokenCounter
from app.service.rate_limits import (
    RateLimited,
    RateLimits,
    TenantLimits,
    TooManyTokens,
    texts,
    whole_seconds,
)

pytestmark = pytest.mark.anyio


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def limits(encoder: tiktoken.Encoding, clock: Clock, *, offload_chars: int = 1_000_000,
           **tenants: TenantLimits) -> tuple[RateLimits, Metrics, TokenCounter]:
    metrics = Metrics(CollectorRegistry())
    counter = TokenCounter(encoder, pretokenizer=pretokenizer(encoder))
    default = tenants.pop("default", None)
    return (RateLimits(MemoryLimiter(clock), metrics, counter, tenants=tenants,
                       default=default, offload_chars=offload_chars), metrics, counter)


def refused(metrics: Metrics, tenant: str, limit: str, route: str = "/synthesize") -> float:
    value = metrics.registry.get_sample_value(
        "contextsynth_rate_limited_total", {"tenant": tenant, "limit": limit, "route": route})
    return value or 0.0


def test_texts_are_every_string_value_but_base64_media():
    body = {"model": "gpt-4o", "messages": [
        {"role": "user", "content": [
            {"type": "text", "text": "what is in this picture?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo"}},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": "iVBORw0KGgo"}},
            {"type": "input_file", "file_data": "JVBERi0xLjQ="}]}],
        "max_tokens": 5, "stream": True}
    assert sorted(texts(body)) == sorted(["gpt-4o", "user", "text",
                                          "what is in this picture?", "image_url", "image",
                                          "base64", "image/png", "input_file"])


def test_texts_of_a_body_nested_deeper_than_the_interpreters_stack():
    deep: object = "needle"
    for _ in range(5000):
        deep = [deep]
    assert texts({"a": deep}) == ["needle"]


async def test_no_limits_cost_nothing(encoder):
    service, _, counter = limits(encoder, Clock())
    assert not service.enabled
    assert await service.admit("anyone", "/synthesize", {"messages": ["x" * 100]}) is None
    assert counter.cache.usage.entries == 0  # not even a count


async def test_a_tenants_own_limits_replace_the_default(encoder):
    clock = Clock()
    service, metrics, _ = limits(
        encoder, clock, default=TenantLimits(requests_per_minute=1),
        big=TenantLimits(requests_per_minute=3), free=TenantLimits())
    assert service.enabled
    assert await service.admit("other", "/synthesize") is not None
    with pytest.raises(RateLimited):
        await service.admit("other", "/synthesize")
    for _ in range(3):
        await service.admit("big", "/synthesize")
    with pytest.raises(RateLimited):
        await service.admit("big", "/synthesize")
    # Listed with no limit: unlimited, whatever the default.
    for _ in range(10):
        assert await service.admit("free", "/synthesize") is None
    assert refused(metrics, "other", "requests_per_minute") == 1
    assert refused(metrics, "big", "requests_per_minute") == 1


async def test_a_refusal_says_which_limit_its_value_and_when_to_retry(encoder):
    clock = Clock()
    service, metrics, _ = limits(encoder, clock, default=TenantLimits(
        requests_per_minute=10, tokens_per_minute=100))
    body = {"messages": [{"role": "user", "content": "word " * 58}]}  # 59 + 1 tokens
    admitted = await service.admit("t", "/synthesize", body)
    assert admitted is not None
    assert admitted.headers() == {
        "x-ratelimit-limit-requests": "10", "x-ratelimit-remaining-requests": "9",
        "x-ratelimit-limit-tokens": "100", "x-ratelimit-remaining-tokens": "40"}
    clock.now += 3  # 5 tokens back: 45 of the 60 needed
    with pytest.raises(RateLimited) as caught:
        await service.admit("t", "/synthesize", body, upstream="openai")
    error = caught.value
    # 15 tokens lacking, refilled at 100 a minute: 9 s.
    assert error.retry_after == pytest.approx(9.0)
    assert error.fields() == {"limit": "tokens_per_minute", "limit_value": 100,
                              "tokens": 60, "retry_after": 9}
    assert error.upstream == "openai"
    assert "60 tokens" in error.detail and "45 of its 100 tokens per minute" in error.detail
    assert "Retry in 9 s" in error.detail
    assert error.headers["x-ratelimit-remaining-tokens"] == "45"
    assert error.headers["x-ratelimit-remaining-requests"] == "9"  # nothing was drawn
    assert refused(metrics, "t", "tokens_per_minute") == 1
    clock.now += 9
    assert await service.admit("t", "/synthesize", body) is not None


async def test_more_tokens_than_a_full_bucket_is_refused_for_good(encoder):
    service, metrics, _ = limits(encoder, Clock(), default=TenantLimits(
        requests_per_minute=5, tokens_per_minute=100_000, tokens_per_day=50))
    with pytest.raises(TooManyTokens) as caught:
        await service.admit("t", "/v1/messages", {"messages": ["word " * 59]})
    error = caught.value
    assert error.retry_after is None
    assert error.fields() == {"limit": "tokens_per_day", "limit_value": 50, "tokens": 60}
    assert "can never be admitted" in error.detail
    assert refused(metrics, "t", "tokens_per_day", "/v1/messages") == 1
    # It drew nothing: the tenant's five requests are all there.
    for _ in range(5):
        await service.admit("t", "/v1/messages", {"messages": ["hi"]})
    with pytest.raises(RateLimited):
        await service.admit("t", "/v1/messages", {"messages": ["hi"]})


async def test_tokens_are_counted_only_where_they_are_limited(encoder):
    service, _, counter = limits(encoder, Clock(),
                                 default=TenantLimits(requests_per_minute=5))
    await service.admit("t", "/synthesize", {"messages": ["some text"]})
    assert counter.cache.usage.entries == 0


@pytest.mark.parametrize("offload_chars", [0, 1_000_000])
async def test_a_body_as_bytes_is_read_and_counted_in_a_thread_when_large(encoder,
                                                                          offload_chars):
    service, _, _ = limits(encoder, Clock(), offload_chars=offload_chars)
    body = {"model": "m", "messages": [{"role": "user", "content": "hello world " * 10}]}
    expected = 1 + 1 + len(encoder.encode("hello world " * 10))  # "m", "user", content
    assert await service.count(json.dumps(body).encode()) == expected
    assert await service.count(body) == expected
    assert await service.count(b"{not json") == 0


def test_a_wait_in_whole_seconds_is_at_least_one():
    assert [whole_seconds(s) for s in (0.0, 0.001, 1.0, 1.2, 59.99)] == [1, 1, 1, 2, 60]


async def test_a_request_without_a_body_draws_no_tokens(encoder):
    service, _, _ = limits(encoder, Clock(), only_tokens=TenantLimits(tokens_per_minute=10),
                           both=TenantLimits(requests_per_minute=1, tokens_per_minute=10))
    assert await service.admit("only_tokens", "/expand/{handle}") is None
    admitted = await service.admit("both", "/expand/{handle}")
    assert admitted is not None
    assert admitted.headers() == {"x-ratelimit-limit-requests": "1",
                                  "x-ratelimit-remaining-requests": "0"}
    # Its tokens are all there for the next request with a body.
    with pytest.raises(RateLimited) as caught:
        await service.admit("both", "/synthesize", {"messages": ["one two"]})
    assert caught.value.limit == "requests_per_minute"
    assert caught.value.headers["x-ratelimit-remaining-tokens"] == "10"
