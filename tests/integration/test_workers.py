"""Two uvicorn workers: the metrics of both add up on /metrics."""

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.support.build import coding_run
from tests.support.subprocess_server import running_service


def test_counts_add_up_across_two_workers(tmp_path):
    with running_service({"PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}, workers=2) as url:
        for _ in range(20):  # a new connection each time, so both workers take some
            with httpx.Client(base_url=url) as c:
                assert c.post("/synthesize", json={"messages": coding_run(5)}).status_code == 200
        writers = {p.name for p in tmp_path.glob("counter_*.db")}
        text = httpx.get(f"{url}/metrics").text
    total = sum(s.value for f in text_string_to_metric_families(text)
                if f.name == "contextsynth_requests" for s in f.samples
                if s.name.endswith("_total") and s.labels["endpoint"] == "/synthesize")
    assert total == 20
    assert len(writers) == 2, "both workers wrote their own counters"
