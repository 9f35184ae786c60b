"""Two uvicorn workers: the metrics of both add up on /metrics, a handle one gave expands
on either, and without Redis to share handles `serve` refuses to start them."""

import os
import subprocess
import sys

import httpx
from prometheus_client.parser import text_string_to_metric_families

from app.cli.redis_nodes import RedisNode
from tests.support.build import coding_run
from tests.support.subprocess_server import running_service


def test_counts_add_up_and_handles_expand_across_two_workers(tmp_path):
    sent = 0
    with RedisNode() as redis, running_service(
            {"PROMETHEUS_MULTIPROC_DIR": str(tmp_path), "CONTEXTSYNTH_REDIS_URL": redis.url},
            workers=2) as url:
        # A new connection each time, until both workers took some: which worker accepts
        # a connection is the kernel's choice, and on a busy machine twenty in a row once
        # all went to one.
        while sent < 20 or (len(list(tmp_path.glob("counter_*.db"))) < 2 and sent < 400):
            with httpx.Client(base_url=url) as c:
                assert c.post("/synthesize", json={"messages": coding_run(5)}).status_code == 200
            sent += 1
        writers = {p.name for p in tmp_path.glob("counter_*.db")}
        text = httpx.get(f"{url}/metrics").text
        # A handle one worker gave expands on whichever worker takes the next connection.
        out = httpx.post(f"{url}/synthesize",
                         json={"messages": coding_run(30, output_chars=3000)}).json()
        handle = out["receipt"]["dropped"][0]["handle"]
        expanded = [httpx.get(f"{url}/expand/{handle}").status_code for _ in range(20)]
    total = sum(s.value for f in text_string_to_metric_families(text)
                if f.name == "contextsynth_requests" for s in f.samples
                if s.name.endswith("_total") and s.labels["route"] == "/synthesize")
    assert len(writers) == 2, "both workers wrote their own counters"
    assert total == sent
    assert expanded == [200] * 20


def test_several_workers_without_redis_are_refused_with_the_fix():
    env = {k: v for k, v in os.environ.items() if k != "CONTEXTSYNTH_REDIS_URL"}
    done = subprocess.run([sys.executable, "-m", "app.cli", "serve", "--workers", "2"],
                          env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2
    assert "CONTEXTSYNTH_REDIS_URL" in done.stderr and "--workers 1" in done.stderr
