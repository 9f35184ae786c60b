"""Signed webhook events end to end: every job, retries, dead letters, durability with Redis."""

import asyncio
import uuid

import pytest
from prometheus_client import CollectorRegistry
from redis import exceptions as redis_errors

from app.adapters.events import Backlog, Deliverer, Emitter, Subscription, WebhookConfig
from app.adapters.metrics import Metrics
from app.adapters.outbox import Entry, RedisOutbox
from app.adapters.pump import Pump
from tests.conftest import serve
from tests.support.build import coding_run
from tests.support.corpus import load_named
from tests.support.fake_llm import FakeLLM
from tests.support.receiver import SECRET, Receiver
from tests.support.redis_server import RedisServer
from tests.support.traces import to_actions

pytestmark = pytest.mark.anyio


async def _metrics_once(client, text, timeout_s=5.0):
    """The metrics page once it holds ``text`` (or as it is after ``timeout_s``)."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        page = (await client.get("/metrics")).text
        if text in page or asyncio.get_running_loop().time() > deadline:
            return page
        await asyncio.sleep(0.01)


def hooks(receiver, **extra):
    return {"webhooks": [{"url": receiver.url, "secret": SECRET}],
            "webhooks_allow_private": True, **extra}


async def test_every_job_emits_a_signed_event(make_app):
    with Receiver() as receiver, FakeLLM() as llm:
        provider = {"name": "local", "kind": "openai", "base_url": llm.base_url,
                    "model": "fake"}
        async with serve(make_app(llm_providers=[provider], **hooks(receiver))) as c:
            run = load_named("minisweagent-ds-chat-dev-pydicom__pydicom-901")
            await c.post("/synthesize", json={"messages": run, "model": "gpt-4o",
                                              "iteration": 60, "max_iterations": 80})
            await c.post("/compress-history", json={"messages": run, "mode": "fast"})
            await c.post("/summarize-trace", json={"actions": to_actions(run), "mode": "fast"})
            await c.post("/rescue", json={"messages": run, "question": "Done?"})
            events = await receiver.wait_for(5)
    assert receiver.rejected_signatures == 0
    by_type = {e["type"]: e for e in events}
    assert set(by_type) == {"context.synthesized", "history.compressed", "trace.summarized",
                            "fallback.notice", "rescue.completed"}
    synthesized = by_type["context.synthesized"]
    assert synthesized["specversion"] == "1.0" and synthesized["tenant"] == "default"
    assert synthesized["data"]["tier"] == "large"
    assert synthesized["data"]["phase"] == "synthesize"  # 60 of 80 iterations: late
    assert synthesized["data"]["iteration"] == 60
    assert synthesized["data"]["stats"]["tokens_after"] < synthesized["data"]["stats"][
        "tokens_before"]
    # Deliveries run side by side, so events may arrive out of order: their times say
    # the notice was made first.
    assert by_type["fallback.notice"]["time"] <= by_type["rescue.completed"]["time"]
    assert by_type["trace.summarized"]["data"]["strategy"] == "deterministic"


async def test_a_failing_receiver_gets_the_event_after_retries(make_app):
    with Receiver() as receiver:
        receiver.respond = lambda n: (503, {}) if n <= 2 else (204, {})
        app = make_app(**hooks(receiver, webhook_retry_schedule_s=[0.05, 0.05, 0.05]))
        async with serve(app) as c:
            await c.post("/synthesize", json={"messages": coding_run(6)})
            await receiver.wait_for(1)
            # The receiver has answered before the sender counts the delivery: wait for it.
            metrics = await _metrics_once(c, 'outcome="delivered"}')
    assert receiver.attempts == 3
    assert ('contextsynth_webhook_deliveries_total{event="context.synthesized",'
            'outcome="retried"} 2.0') in metrics
    assert 'outcome="delivered"} 1.0' in metrics


async def test_an_event_that_never_gets_through_is_dead_lettered(make_app):
    with Receiver() as receiver:
        receiver.respond = lambda n: (500, {})
        app = make_app(**hooks(receiver, webhook_retry_schedule_s=[0.02, 0.02]))
        async with serve(app) as c:
            await c.post("/synthesize", json={"messages": coding_run(6)})
            metrics = await _metrics_once(c, 'outcome="dead_lettered"} 1.0')
            outbox = app.state.webhooks.outbox
    assert receiver.attempts == 3
    assert 'outcome="dead_lettered"} 1.0' in metrics
    assert "gave up after 3 attempts: HTTP 500" in outbox.dead_letters[0][1]


async def test_410_disables_the_endpoint(make_app):
    with Receiver() as receiver:
        receiver.respond = lambda n: (410, {})
        app = make_app(**hooks(receiver))
        async with serve(app) as c:
            await c.post("/synthesize", json={"messages": coding_run(6)})
            for _ in range(200):
                if not app.state.webhooks.subscriptions[0].enabled:
                    break
                await asyncio.sleep(0.02)
            await c.post("/synthesize", json={"messages": coding_run(7)})
            await asyncio.sleep(0.2)
    assert receiver.attempts == 1  # nothing more was sent after the 410


async def test_retry_after_is_honoured(make_app):
    with Receiver() as receiver:
        receiver.respond = lambda n: (429, {"retry-after": "0"}) if n == 1 else (204, {})
        app = make_app(**hooks(receiver, webhook_retry_schedule_s=[3600]))
        async with serve(app) as c:
            await c.post("/synthesize", json={"messages": coding_run(6)})
            await receiver.wait_for(1, timeout_s=5)  # not the hour of the schedule
    assert receiver.attempts == 2


async def test_with_redis_an_event_survives_a_restart(make_app):
    with RedisServer() as redis:
        receiver = Receiver()
        settings = hooks(receiver, redis_url=redis.url, webhook_retry_schedule_s=[0.3, 0.3],
                         webhook_drain_s=0)
        async with serve(make_app(**settings)) as first:
            await first.post("/synthesize", json={"messages": coding_run(6)})
            await asyncio.sleep(0.2)  # the receiver is down: the event waits for a retry
        with receiver:
            async with serve(make_app(**settings)):
                events = await receiver.wait_for(1)
    assert events[0]["type"] == "context.synthesized"
    assert receiver.headers[0]["webhook-id"] == events[0]["id"]


async def test_a_replica_claims_what_a_dead_one_read():
    with RedisServer() as redis:
        dead = RedisOutbox(redis.url, claim_idle_s=0.1)
        alive = RedisOutbox(redis.url, claim_idle_s=0.1)
        await dead.put(Entry('{"x":1}', f"msg_{uuid.uuid4().hex}", "context.synthesized", 0))
        taken = await dead.take(0.1)  # read, never finished: the replica "died"
        assert len(taken) == 1
        await asyncio.sleep(0.15)
        claimed = await alive.take(0.1)
        assert [e.event_id for e in claimed] == [taken[0].event_id]
        await alive.done(claimed[0])
        assert await alive.depth() == 0
        await dead.aclose()
        await alive.aclose()


async def test_shutdown_drains_what_is_queued(make_app):
    with Receiver() as receiver:
        app = make_app(**hooks(receiver, webhook_drain_s=5))
        async with serve(app) as c:
            await c.post("/synthesize", json={"messages": coding_run(6)})
            # leave at once: the lifespan's shutdown must still deliver it
        assert len(receiver.events) == 1


async def test_memory_jobs_emit_their_events(make_app):
    with Receiver() as receiver:
        async with serve(make_app(**hooks(receiver))) as c:
            await c.post("/summarize-recall", json={
                "query": "seat?", "memories": [{"id": "m1", "text": "aisle seat"}]})
            await c.post("/reflect", json={"goal": "g", "tool_calls": [
                {"tool": "ls", "output": "a.py"}]})
            events = await receiver.wait_for(2)
    assert {e["type"] for e in events} == {"recall.summarized", "reflection.recorded"}
    recall = next(e for e in events if e["type"] == "recall.summarized")
    assert recall["data"]["mode"] == "extractive" and recall["data"]["sources_used"] == ["m1"]


class CountingOutbox:
    """Passes entries on to a real outbox and counts the attempts."""

    def __init__(self, inner):
        self.inner = inner
        self.attempts = 0
        self.losses = 0

    async def put(self, entry):
        self.attempts += 1
        return await self.inner.put(entry)

    async def depth(self):
        return await self.inner.depth()


def _pump(outbox, metrics, subscriptions=1, **extra):
    deliverer = Deliverer([Subscription(WebhookConfig(url="https://hooks.example.com/x",
                                                      secret=SECRET))] * subscriptions,
                          outbox, metrics)
    return Pump(Backlog(1000, metrics), outbox, deliverer, metrics,
                subscriptions=subscriptions, width=4, pause_s=0.05, shared=True,
                journal_entries=1000, put_timeout_s=0.2, **extra)


async def test_with_redis_down_events_wait_in_memory_and_go_in_when_it_is_back():
    with RedisServer() as redis:
        outbox = RedisOutbox(redis.url, timeout_s=0.2)
        redis.kill()
        spy = CountingOutbox(outbox)
        registry = CollectorRegistry()
        metrics = Metrics(registry)
        pump = _pump(spy, metrics)
        emitter = Emitter([Subscription(WebhookConfig(url="https://hooks.example.com/x",
                                                      secret=SECRET))], pump.accept)
        ids = [await emitter.emit("context.synthesized", "default", {"n": n})
               for n in range(50)]
        assert spy.attempts == 1  # one request found Redis down; the others did not wait
        assert len(pump.backlog) == 50 and not await pump.flush()
        redis.start()
        for _ in range(3):  # the client reconnects on the first command after the restart
            if await pump.flush():
                break
        assert len(pump.backlog) == 0 and await outbox.depth() == 50
        taken = await outbox.take(0.1)
        assert [e.event_id for e in taken] == ids  # none lost, in the order they came
        assert registry.get_sample_value("contextsynth_webhook_dropped_total",
                                         {"event": "context.synthesized"}) is None
        await outbox.aclose()


async def test_a_slow_endpoint_does_not_delay_another(make_app):
    with Receiver() as slow, Receiver() as healthy:
        slow.delay_s = 0.5
        app = make_app(webhooks=[{"url": slow.url, "secret": SECRET},
                                 {"url": healthy.url, "secret": SECRET}],
                       webhooks_allow_private=True, webhook_concurrency=2)
        async with serve(app) as c:
            for _ in range(20):
                await c.post("/summarize-recall", json={
                    "query": "seat?", "memories": [{"id": "m1", "text": "aisle seat"}]})
            await healthy.wait_for(20)
            # Two at a time, half a second each: the slow one is far behind, and the
            # healthy one did not wait for it.
            assert len(slow.events) <= 6
            await slow.wait_for(20)


async def test_the_outbox_makes_its_group_again_after_redis_restarts_empty():
    with RedisServer() as redis:
        outbox = RedisOutbox(redis.url, claim_idle_s=60)
        await outbox.put(Entry('{"x":1}', f"msg_{uuid.uuid4().hex}", "context.synthesized", 0))
        first = await outbox.take(0.1)
        await outbox.done(first[0])
        redis.kill()
        redis.start()  # same port, nothing in it: no stream, no consumer group
        event_id = f"msg_{uuid.uuid4().hex}"
        for _ in range(3):  # the client reconnects on the first command after the restart
            try:
                await outbox.put(Entry('{"x":2}', event_id, "context.synthesized", 0))
                break
            except redis_errors.ConnectionError:
                await asyncio.sleep(0.05)
        taken = await outbox.take(0.1)
        assert [e.event_id for e in taken] == [event_id]
        await outbox.done(taken[0])
        assert await outbox.depth() == 0
        await outbox.aclose()
