import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.build import coding_run

pytestmark = pytest.mark.anyio


async def test_health_and_readiness(client):
    assert (await client.get("/healthz")).json() == {"status": "ok", "checks": {}}
    ready = await client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["status"] == "ready"


async def test_metrics_count_requests_tokens_and_ratio(client):
    await client.post("/synthesize", json={"messages": coding_run(8)})
    await client.post("/synthesize", json={"messages": []})
    text = (await client.get("/metrics")).text
    families = {f.name: f for f in text_string_to_metric_families(text)}
    requests = {(s.labels["endpoint"], s.labels["mode"], s.labels["status"]): s.value
                for s in families["contextsynth_requests"].samples
                if s.name.endswith("_total")}
    assert requests[("/synthesize", "fast", "200")] == 1
    assert requests[("/synthesize", "none", "422")] == 1
    tokens = {s.labels["direction"]: s.value for s in families["contextsynth_tokens"].samples
              if s.name.endswith("_total")}
    assert tokens["in"] > tokens["out"] > 0
    ratio = [s for s in families["contextsynth_compression_ratio"].samples
             if s.name.endswith("_count")]
    assert ratio[0].value == 1
    durations = [s for s in families["contextsynth_request_duration_seconds"].samples
                 if s.name.endswith("_count") and s.labels["mode"] == "fast"]
    assert durations[0].value == 1
    phases = {s.labels["phase"]: s.value for s in families["contextsynth_phase"].samples
              if s.name.endswith("_total")}
    assert phases == {"gather": 1.0}
