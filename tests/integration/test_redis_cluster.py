"""Every Redis-backed feature on a live three-master Redis Cluster: cached LLM results
and their single flight, expand handles, proxy receipts, the recall cache, the
webhook outbox, and one tenant's keys spread over every master."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest
import respx

from app.adapters.outbox import STREAM
from tests.api.test_deep import PROVIDER, URL, completion
from tests.conftest import serve
from tests.support.build import coding_run
from tests.support.fake_upstream import FakeUpstream
from tests.support.receiver import SECRET, Receiver
from tests.support.redis_cluster import RedisClusterServer

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def cluster() -> Iterator[RedisClusterServer]:
    with RedisClusterServer(masters=3) as live:
        yield live


def _on(cluster: RedisClusterServer, **extra: object) -> dict[str, object]:
    return {"redis_url": cluster.url, "redis_cluster": True, "redis_timeout_s": 1.0, **extra}


def _run(n: int = 12) -> list[dict[str, object]]:
    """A conversation no other call sends: its results and handles are keys of its own."""
    mark = uuid.uuid4().hex
    return [{**m, "content": f"{m['content']} ({mark})"} if isinstance(m.get("content"), str)
            else m for m in coding_run(n)]


@respx.mock
async def test_llm_results_are_cached_and_shared(make_app, cluster):
    route = respx.post(URL).respond(200, json=completion())
    body = {"messages": _run(), "reasoning": {"synthesis": "deep"}}
    async with serve(make_app(llm_providers=[PROVIDER], **_on(cluster))) as c:
        first, second = await asyncio.gather(c.post("/synthesize", json=body),
                                             c.post("/synthesize", json=body))
        third = await c.post("/synthesize", json=body)
        ready = (await c.get("/readyz")).json()
    assert route.call_count == 1  # one call for three requests: single flight, then a hit
    assert third.json()["cache"]["hit"] and first.status_code == second.status_code == 200
    assert ready["status"] == "ready"


@respx.mock
async def test_the_recall_cache(make_app, cluster):
    route = respx.post(URL).respond(200, json=completion("Aisle [m1]."))
    body = {"query": f"Which seat? {uuid.uuid4()}", "mode": "deep",
            "memories": [{"id": "m1", "text": "Mia always books an aisle seat."}]}
    async with serve(make_app(llm_providers=[PROVIDER], **_on(cluster))) as c:
        await c.post("/summarize-recall", json=body)
        again = (await c.post("/summarize-recall", json=body)).json()
    assert route.call_count == 1 and again["cache"]["hit"]


async def test_expand_handles(make_app, cluster):
    messages = _run(24)
    async with serve(make_app(**_on(cluster))) as c:
        out = (await c.post("/synthesize", json={"messages": messages})).json()
        span = out["receipt"]["dropped"][0]
        expanded = (await c.get(f"/expand/{span['handle']}")).json()
    assert expanded["messages"] == messages[span["first"]:span["last"] + 1]


async def test_proxy_receipts(make_app, cluster):
    body = {"model": "gpt-4o-mini", "messages": _run(14)}
    with FakeUpstream() as upstream:
        app = make_app(proxy_openai_url=f"{upstream.url}/v1", **_on(cluster))
        async with serve(app) as c:
            answer = await c.post("/v1/chat/completions", json=body,
                                  headers={"x-request-id": f"agent-{uuid.uuid4().hex}"})
            receipt = await c.get("/v1/contextsynth/receipts/"
                                  f"{answer.headers['x-contextsynth-receipt']}")
    assert answer.headers["x-contextsynth-compaction"] == "compacted"
    assert receipt.status_code == 200 and receipt.json()["receipt"]["dropped"]


async def test_webhook_events_go_through_the_clusters_outbox(make_app, cluster):
    with Receiver() as receiver:
        app = make_app(webhooks=[{"url": receiver.url, "secret": SECRET}],
                       webhooks_allow_private=True, **_on(cluster))
        async with serve(app) as c:
            for _ in range(5):
                await c.post("/summarize-recall", json={
                    "query": "seat?", "memories": [{"id": "m1", "text": "aisle seat"}]})
            events = await receiver.wait_for(5)
    assert {e["type"] for e in events} == {"recall.summarized"}
    assert receiver.rejected_signatures == 0


async def test_one_tenants_keys_spread_over_every_master(make_app, cluster):
    before = cluster.keys_per_master()
    async with serve(make_app(**_on(cluster))) as c:
        for _ in range(20):
            await c.post("/synthesize", json={"messages": _run(24)})
    added = {port: count - before.get(port, 0)
             for port, count in cluster.keys_per_master().items()}
    total = sum(added.values())
    assert total >= 40  # each conversation's handles
    assert max(added.values()) <= total / 2, added


def _lost(page: str) -> float:
    return sum(float(line.rsplit(" ", 1)[1]) for line in page.splitlines()
               if line.startswith("contextsynth_webhook_lost_total"))


async def test_a_failover_of_the_outboxs_master_loses_no_event(make_app):
    with RedisClusterServer(masters=3, replicas=1) as cluster, Receiver() as receiver:
        app = make_app(webhooks=[{"url": receiver.url, "secret": SECRET}],
                       webhooks_allow_private=True, redis_pause_s=0.1, **_on(cluster))
        sent: list[str] = []

        async def call(c) -> None:
            rid = f"failover-{uuid.uuid4().hex[:12]}"
            r = await c.post("/summarize-recall", headers={"x-request-id": rid}, json={
                "query": "seat?", "memories": [{"id": "m1", "text": "aisle seat"}]})
            assert r.status_code == 200, r.text
            sent.append(rid)

        async with serve(app) as c:
            for _ in range(10):
                await call(c)
            await receiver.wait_for(10)
            cluster.kill(cluster.master_of(STREAM))  # its replica takes over
            for _ in range(20):
                await call(c)  # every request answered while the cluster fails over
            for _ in range(600):
                if set(sent) <= {e.get("requestid") for e in receiver.events}:
                    break
                await asyncio.sleep(0.05)
            assert set(sent) <= {e.get("requestid") for e in receiver.events}
            assert _lost((await c.get("/metrics")).text) == 0
