"""Webhook events under faults, every one counted: Redis killed, stopped and restarted
empty, the receiver down, failing and slow, and the service itself killed. Every event
of an answered request reaches the receiver (duplicates allowed), or its loss is
counted in ``contextsynth_webhook_lost_total``."""

from __future__ import annotations

import json
import os
import signal
import time
import uuid

import httpx

from tests.support.receiver import SECRET, Receiver
from tests.support.redis_server import RedisServer
from tests.support.subprocess_server import service_process


def _env(redis: RedisServer, receiver: Receiver) -> dict[str, str]:
    return {
        "CONTEXTSYNTH_REDIS_URL": redis.url,
        "CONTEXTSYNTH_REDIS_TIMEOUT_S": "0.2", "CONTEXTSYNTH_REDIS_PAUSE_S": "0.1",
        "CONTEXTSYNTH_WEBHOOKS": json.dumps([{"url": receiver.url, "secret": SECRET}]),
        "CONTEXTSYNTH_WEBHOOKS_ALLOW_PRIVATE": "true",
        # Ten attempts over about 27 s: longer than twenty calls take on a busy machine, so
        # an event is not given up on while the receiver is down in a phase of the test.
        "CONTEXTSYNTH_WEBHOOK_RETRY_SCHEDULE_S": "[0.2, 0.5, 1, 2, 3, 4, 4, 4, 4, 4]",
        "CONTEXTSYNTH_WEBHOOK_TIMEOUT_S": "2", "CONTEXTSYNTH_OUTBOX_CLAIM_IDLE_S": "1",
    }


class Agent:
    """Calls a job whose answer emits one event, under a request id of its own."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def call(self, url: str, count: int) -> None:
        with httpx.Client(base_url=url, timeout=30) as client:
            for _ in range(count):
                rid = f"fault-{uuid.uuid4().hex[:12]}"
                r = client.post("/summarize-recall", headers={"x-request-id": rid}, json={
                    "query": "seat?", "memories": [{"id": "m1", "text": "aisle seat"}]})
                assert r.status_code == 200, r.text
                self.sent.append(rid)


def _lost(url: str) -> float:
    page = httpx.get(f"{url}/metrics").text
    return sum(float(line.rsplit(" ", 1)[1]) for line in page.splitlines()
               if line.startswith("contextsynth_webhook_lost_total"))


def _wait_for_all(receiver: Receiver, sent: list[str], timeout_s: float = 60) -> set[str]:
    deadline = time.monotonic() + timeout_s
    while True:
        got = {e.get("requestid") for e in receiver.events}
        missing = set(sent) - got
        if not missing or time.monotonic() > deadline:
            return missing
        time.sleep(0.1)


def test_no_event_of_an_answered_request_is_lost_under_faults() -> None:
    agent = Agent()
    with RedisServer() as redis, Receiver() as receiver:
        env = _env(redis, receiver)
        with service_process(env) as (first, url):
            agent.call(url, 20)
            redis.kill()  # SIGKILL: events wait in memory
            agent.call(url, 20)
            redis.start()  # back, empty
            agent.call(url, 20)
            assert redis.proc is not None
            redis.proc.send_signal(signal.SIGSTOP)  # hung: no answer, no error
            agent.call(url, 20)
            redis.proc.send_signal(signal.SIGCONT)
            receiver.respond = lambda n: (503, {})  # the receiver is down
            agent.call(url, 20)
            time.sleep(0.5)  # retries scheduled in Redis...
            redis.kill()
            redis.start()  # ...which restarts empty: the process writes them again
            agent.call(url, 10)
            receiver.respond = lambda n: (500, {}) if n % 3 == 0 else (204, {})  # flaky
            receiver.delay_s = 0.05  # and slow
            agent.call(url, 20)
            assert _wait_for_all(receiver, agent.sent) == set()
            assert _lost(url) == 0
            agent.call(url, 20)
            receiver.respond = lambda n: (503, {})
            agent.call(url, 20)  # these are in Redis, read or not, when the service dies
            os.kill(first.pid, signal.SIGKILL)
            first.wait(timeout=10)
        receiver.respond = lambda n: (204, {})
        receiver.delay_s = 0
        with service_process(env) as (_, url):  # another replica claims what was read
            assert _wait_for_all(receiver, agent.sent) == set()
    assert receiver.rejected_signatures == 0
    assert len(agent.sent) == 170
