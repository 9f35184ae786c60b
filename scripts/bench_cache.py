"""Latency of a cached deep /synthesize call against an uncached one (a benchmark, not a test).

The LLM is the tests' local OpenAI-compatible server over loopback, answering
after a chosen delay that stands in for a provider's latency. Run from the
repository root:  .venv/bin/python scripts/bench_cache.py [--delay 0.8] [--redis URL]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

import httpx
from prometheus_client import CollectorRegistry

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.main import create_app
from app.settings import Settings
from tests.support.corpus import load_named
from tests.support.fake_llm import FakeLLM


async def timed(client: httpx.AsyncClient, body: dict[str, object]) -> tuple[float, bool]:
    started = time.perf_counter()
    response = await client.post("/synthesize", json=body)
    elapsed = time.perf_counter() - started
    assert response.status_code == 200, response.text
    return elapsed, bool(response.json()["cache"]["hit"])


async def main(delay: float, redis_url: str | None, runs: int) -> None:
    messages = load_named("minisweagent-ds-chat-dev-pydicom__pydicom-901")
    with FakeLLM(delay_s=delay) as llm:
        settings = Settings(redis_url=redis_url, llm_providers=[{
            "name": "local", "kind": "openai", "base_url": llm.base_url, "model": "fake"}])
        app = create_app(settings, registry=CollectorRegistry())
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://b") as c:
                body = {"messages": messages, "reasoning": {"synthesis": "deep"}}
                await timed(c, body)  # warm the token cache and the connection pool
                uncached = [await timed(c, {**body, "force_refresh": True})
                            for _ in range(runs)]
                cached = [await timed(c, body) for _ in range(runs)]
    assert not any(hit for _, hit in uncached)
    assert all(hit for _, hit in cached)
    u = statistics.median(t for t, _ in uncached) * 1000
    k = statistics.median(t for t, _ in cached) * 1000
    print(json.dumps({"cache": "redis" if redis_url else "memory", "llm_delay_ms": delay * 1000,
                      "runs": runs, "uncached_median_ms": round(u, 2),
                      "cached_median_ms": round(k, 2), "cached_share": round(k / u, 4)}))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--delay", type=float, default=0.8)
    parser.add_argument("--redis", default=None)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    asyncio.run(main(args.delay, args.redis, args.runs))
