import asyncio

import pytest
import respx
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import serve
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
    requests = {(s.labels["route"], s.labels["mode"], s.labels["status"]): s.value
                for s in families["contextsynth_requests"].samples
                if s.name.endswith("_total")}
    assert requests[("/synthesize", "fast", "200")] == 1
    assert requests[("/synthesize", "none", "422")] == 1
    tokens = {(s.labels["operation"], s.labels["tenant"], s.labels["direction"]): s.value
              for s in families["contextsynth_tokens"].samples if s.name.endswith("_total")}
    assert tokens[("synthesize", "default", "in")] > tokens[("synthesize", "default", "out")] > 0
    ratio = [s for s in families["contextsynth_compression_ratio"].samples
             if s.name.endswith("_count")]
    assert ratio[0].value == 1
    durations = [s for s in families["contextsynth_request_duration_seconds"].samples
                 if s.name.endswith("_count") and s.labels["mode"] == "fast"]
    assert durations[0].value == 1
    phases = {s.labels["phase"]: s.value for s in families["contextsynth_phase"].samples
              if s.name.endswith("_total")}
    assert phases == {"gather": 1.0}


async def test_requests_and_tokens_are_counted_by_tenant(make_app):
    from app.api.auth import hash_key

    async with serve(make_app(api_keys={hash_key("key-a"): "team-a"})) as c:
        ok = await c.post("/synthesize", json={"messages": coding_run(8)},
                          headers={"authorization": "Bearer key-a"})
        refused = await c.post("/synthesize", json={"messages": coding_run(8)})
        text = (await c.get("/metrics")).text
    assert (ok.status_code, refused.status_code) == (200, 401)
    families = {f.name: f for f in text_string_to_metric_families(text)}
    requests = {(s.labels["route"], s.labels["status"], s.labels["tenant"]): s.value
                for s in families["contextsynth_requests"].samples
                if s.name.endswith("_total")}
    # A caller without a valid key has no tenant: counted apart, under "none".
    assert requests[("/synthesize", "200", "team-a")] == 1
    assert requests[("/synthesize", "401", "none")] == 1
    tenants = {s.labels["tenant"] for s in families["contextsynth_tokens"].samples}
    assert tenants == {"team-a"}


SECTION_13 = {
    "contextsynth_requests": {"route", "mode", "status", "tenant"},
    "contextsynth_request_duration_seconds": {"route", "mode"},
    "contextsynth_requests_in_flight": {"route"},
    "contextsynth_tokens": {"operation", "tenant", "direction"},
    "contextsynth_compression_ratio": {"operation"},
    "contextsynth_cache_requests": {"result"},
    "contextsynth_llm_requests": {"provider", "model", "outcome"},
    "contextsynth_llm_duration_seconds": {"provider", "model"},
    "contextsynth_llm_tokens": {"provider", "model", "direction"},
    "contextsynth_fallbacks": {"reason"},
    "contextsynth_phase": {"phase"},
    "contextsynth_webhook_deliveries": {"event", "outcome"},
    "contextsynth_webhook_queue_depth": set(),
    "contextsynth_build_info": {"version", "engine"},
}


async def test_every_design_metric_is_exposed_with_its_labels(make_app):
    from tests.conftest import serve
    from tests.support.fake_llm import FakeLLM
    from tests.support.receiver import SECRET, Receiver

    with Receiver() as receiver, FakeLLM() as llm:
        app = make_app(
            llm_providers=[{"name": "local", "kind": "openai", "base_url": llm.base_url,
                            "model": "fake"},
                           {"name": "down", "kind": "openai",
                            "base_url": "http://127.0.0.1:9/v1", "model": "none"}],
            webhooks=[{"url": receiver.url, "secret": SECRET}], webhooks_allow_private=True,
            llm_retries=1)
        async with serve(app) as c:
            deep = {"messages": coding_run(12), "reasoning": {"synthesis": "deep"}}
            await c.post("/synthesize", json=deep)
            await c.post("/synthesize", json={**deep, "reasoning": {
                "synthesis": "deep", "synthesis_provider": "down"}})  # a fallback
            await receiver.wait_for(2)
            # The service counts a delivery once the receiver's answer is back, which
            # can come after the receiver has the event: read until it is counted.
            for _ in range(100):
                text = (await c.get("/metrics")).text
                if "contextsynth_webhook_deliveries_total{" in text:
                    break
                await asyncio.sleep(0.05)
    families = {f.name: f for f in text_string_to_metric_families(text)}
    for name, labels in SECTION_13.items():
        assert name in families, name
        samples = [s for s in families[name].samples if not s.name.endswith("_created")]
        assert samples, f"{name} has no samples"
        assert set(samples[0].labels) - {"le"} == labels, name


async def test_metrics_have_the_runtime_series_and_label_the_docs(client):
    await client.get("/docs")
    await client.get("/openapi.json")
    text = (await client.get("/metrics")).text
    for series in ("process_resident_memory_bytes", "process_open_fds", "python_info",
                   "python_gc_objects_collected_total"):
        assert series in text, series
    assert 'route="/docs"' in text and 'route="/openapi.json"' in text
    assert 'route="unmatched"' not in text


@respx.mock
async def test_a_model_the_caller_names_does_not_make_a_series(make_app):
    from tests.api.test_deep import PROVIDER, URL, completion

    respx.post(URL).respond(200, json=completion())
    async with serve(make_app(llm_providers=[PROVIDER], llm_allowed_models=["small-1"])) as c:
        for name in ("made-up-model-1", "made-up-model-2", "small-1"):
            r = await c.post("/synthesize", json={
                "messages": coding_run(12), "reasoning": {"synthesis": "deep",
                                                           "synthesis_model": name}})
            assert r.status_code == (200 if name == "small-1" else 422), name
        text = (await c.get("/metrics")).text
    assert "made-up-model" not in text
    assert 'contextsynth_llm_requests_total{model="small-1",outcome="ok",provider="main"} 1.0' \
        in text


def _warm(text):
    families = {f.name: f for f in text_string_to_metric_families(text)}
    lookups = {(s.labels["cache"], s.labels["result"]): s.value
               for s in families["contextsynth_warm_lookups"].samples
               if s.name.endswith("_total")}
    held = {s.labels["cache"]: s.value for s in families["contextsynth_warm_held"].samples}
    active = families["contextsynth_active_conversations"].samples[0].value
    return lookups, held, active


async def test_the_warm_path_shows_its_hits_misses_and_the_agents_it_holds(client):
    # Three agents, each resending its history with a step more, as agents do: after
    # each one's first call, its body, its tail, its closed blocks' notes and its token
    # counts are found again.
    runs = [coding_run(40, output_chars=1500 + 100 * n) for n in range(3)]
    for step in range(30, 35):
        for run in runs:
            prefix = run[: 2 * step + 2]
            r = await client.post("/synthesize", json={"messages": prefix})
            assert r.status_code == 200
    lookups, held, active = _warm((await client.get("/metrics")).text)
    for cache in ("resent_bodies", "tails", "block_notes", "token_counts"):
        assert lookups[(cache, "hit")] > 0, cache
        assert lookups[(cache, "miss")] > 0, cache  # each agent's first call is cold
        assert held[cache] > 0, cache
    assert lookups[("tails", "hit")] >= 3 * 4  # every call after an agent's first
    assert active == 3


async def test_a_cold_agent_every_call_shows_as_misses(client):
    # Each call another agent's (or landing on another replica): nothing is found again.
    for n in range(6):
        run = coding_run(30, output_chars=1200 + 50 * n)
        await client.post("/synthesize", json={"messages": run})
    lookups, _, _ = _warm((await client.get("/metrics")).text)
    assert lookups[("tails", "hit")] == 0 and lookups[("tails", "miss")] == 6


async def test_every_cache_together_holds_no_more_than_the_one_setting(make_app):
    # Forty agents one after another, two steps each, in a worker whose caches may hold
    # 16 MiB together: the caches fill and let go, every one within its share of the
    # one total, and each agent's second step still finds what its first left.
    total = 16 << 20
    async with serve(make_app(cache_memory_bytes=total)) as c:
        for n in range(40):
            run = coding_run(40, output_chars=3000 + 10 * n)
            for step in (30, 31):
                r = await c.post("/synthesize", json={"messages": run[: 2 * step + 2]})
                assert r.status_code == 200
        text = (await c.get("/metrics")).text
    lookups, held, _ = _warm(text)
    families = {f.name: f for f in text_string_to_metric_families(text)}
    evicted = {s.labels["cache"]: s.value for s in families["contextsynth_warm_evictions"]
               .samples if s.name.endswith("_total")}
    assert {"resent_bodies", "tails", "run_summaries", "settled_runs", "in_process_cache",
            "call_summaries"} <= held.keys()
    assert 0 < sum(held.values()) <= total
    # The bound was reached (a tail's entry is a few KB now: forty fit in its share).
    assert evicted["resent_bodies"] > 0 and evicted["run_summaries"] > 0
    assert lookups[("tails", "hit")] >= 40  # the agent still calling kept its tail


async def test_build_info_says_which_release_and_engine_serve(client):
    from app import VERSION

    text = (await client.get("/metrics")).text
    [sample] = [s for f in text_string_to_metric_families(text)
                if f.name == "contextsynth_build_info" for s in f.samples]
    # The tests run the compiled engine (conftest refuses stale extensions).
    assert sample.labels == {"version": VERSION, "engine": "compiled"} and sample.value == 1
