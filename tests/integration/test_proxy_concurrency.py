"""The proxy under many long streams: a pool sized for streaming, and a full pool that
queues within a bound and then answers 503 in the provider's own error shape, never a
504 for a request the upstream never saw."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry

from app.main import create_app
from app.settings import Settings
from tests.support.fake_upstream import FakeUpstream
from tests.support.threaded import served

SLOW = {"model": "slow", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
QUICK_ANTHROPIC = {"model": "claude-sonnet-4-5", "max_tokens": 64,
                   "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream() as fake:
        yield fake


def _proxy(upstream: FakeUpstream, **settings: Any) -> Any:
    return served(create_app(
        Settings(proxy_openai_url=f"{upstream.url}/v1", proxy_anthropic_url=upstream.url,
                 **settings),
        registry=CollectorRegistry(), discover=lambda: [], environ={}))


async def _stream(client: httpx.AsyncClient, path: str = "/v1/chat/completions",
                  body: dict[str, Any] = SLOW) -> tuple[int, int, httpx.Headers, bytes]:
    async with client.stream("POST", path, json=body,
                             headers={"authorization": "Bearer sk-caller"}) as r:
        data = await r.aread()
    return r.status_code, data.count(b"data: "), r.headers, data


def test_two_hundred_streams_at_once_all_reach_the_upstream(upstream: FakeUpstream) -> None:
    seen = len(upstream.received)
    upstream.most_slow_streams = 0

    async def run(url: str) -> list[tuple[int, int, httpx.Headers, bytes]]:
        limits = httpx.Limits(max_connections=250, max_keepalive_connections=250)
        async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:
            return await asyncio.gather(*(_stream(client) for _ in range(200)))

    with _proxy(upstream) as url:
        answers = asyncio.run(run(url))
    assert [status for status, *_ in answers] == [200] * 200
    assert all(events == 50 for _, events, *_ in answers)  # every stream to its end
    assert len(upstream.received) - seen == 200
    assert upstream.most_slow_streams == 200  # all at once: none waited for another


def test_a_full_pool_queues_within_its_bound_then_answers_503(upstream: FakeUpstream) -> None:
    seen = len(upstream.received)

    async def run(url: str) -> tuple[list[Any], Any]:
        async with httpx.AsyncClient(base_url=url, timeout=60) as client:
            streams = [asyncio.create_task(_stream(client)) for _ in range(4)]
            await asyncio.sleep(0.5)  # the four streams hold every connection
            waiting = [asyncio.create_task(_stream(client)) for _ in range(2)]
            await asyncio.sleep(0.1)
            refused = await asyncio.gather(*(_stream(client) for _ in range(3)))
            anthropic = await _stream(client, "/v1/messages", QUICK_ANTHROPIC)
            return list(await asyncio.gather(*streams, *waiting)) + refused, anthropic

    with _proxy(upstream, proxy_max_connections=4, proxy_queue=2,
                proxy_queue_timeout_s=1.0) as url:
        answers, anthropic = asyncio.run(run(url))
    statuses = [status for status, *_ in answers]
    assert statuses == [200] * 4 + [503] * 5
    for _, _, headers, data in answers[4:]:
        assert int(headers["retry-after"]) >= 1
        error = httpx.Response(503, content=data).json()["error"]
        assert error["type"] == "server_error" and "CONTEXTSYNTH_PROXY_MAX_CONNECTIONS" \
            in error["message"]
    # With the queue full too, an Anthropic caller gets Anthropic's overloaded error.
    status, _, headers, data = anthropic
    assert status == 503 and headers["retry-after"]
    assert httpx.Response(503, content=data).json()["error"]["type"] == "overloaded_error"
    assert len(upstream.received) - seen == 4  # the refused were never sent
