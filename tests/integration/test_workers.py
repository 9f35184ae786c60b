"""Two uvicorn workers: the metrics of both add up on /metrics."""

import os
import subprocess
import sys
import time

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.support.build import coding_run
from tests.support.redis_server import free_port


def test_counts_add_up_across_two_workers(tmp_path):
    port = free_port()
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path),
           "CONTEXTSYNTH_LOG_LEVEL": "warning"}
    proc = subprocess.Popen([sys.executable, "-m", "app.cli", "serve", "--host", "127.0.0.1",
                             "--port", str(port), "--workers", "2"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, "did not start"
            time.sleep(0.2)
        time.sleep(1.0)  # let the second worker finish starting too
        for _ in range(20):  # a new connection each time, so both workers take some
            with httpx.Client(base_url=url) as c:
                assert c.post("/synthesize", json={"messages": coding_run(5)}).status_code == 200
        pids = {p.name for p in tmp_path.glob("counter_*.db")}
        text = httpx.get(f"{url}/metrics").text
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    total = sum(s.value for f in text_string_to_metric_families(text)
                if f.name == "contextsynth_requests" for s in f.samples
                if s.name.endswith("_total") and s.labels["endpoint"] == "/synthesize")
    assert total == 20
    assert len(pids) == 2, "both workers wrote their own counters"
