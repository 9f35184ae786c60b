"""Two uvicorn workers: the metrics of both add up on /metrics."""

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.support.build import coding_run
from tests.support.subprocess_server import running_service


def test_counts_add_up_across_two_workers(tmp_path):
    sent = 0
    with running_service({"PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}, workers=2) as url:
        # A new connection each time, until both workers took some: which worker accepts
        # a connection is the kernel's choice, and on a busy machine twenty in a row once
        # all went to one.
        while sent < 20 or (len(list(tmp_path.glob("counter_*.db"))) < 2 and sent < 400):
            with httpx.Client(base_url=url) as c:
                assert c.post("/synthesize", json={"messages": coding_run(5)}).status_code == 200
            sent += 1
        writers = {p.name for p in tmp_path.glob("counter_*.db")}
        text = httpx.get(f"{url}/metrics").text
    total = sum(s.value for f in text_string_to_metric_families(text)
                if f.name == "contextsynth_requests" for s in f.samples
                if s.name.endswith("_total") and s.labels["endpoint"] == "/synthesize")
    assert len(writers) == 2, "both workers wrote their own counters"
    assert total == sent
