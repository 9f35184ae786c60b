"""Malformed provider replies fail like any failed call: never a 500, on every LLM job."""

import pytest
import respx

from tests.api.test_deep import PROVIDER, URL, completion
from tests.api.test_memory_jobs import CALL, MEMORIES
from tests.conftest import serve
from tests.support.build import coding_run
from tests.support.corpus import load_named
from tests.support.traces import to_actions

pytestmark = pytest.mark.anyio

# Every job that calls the LLM, in the mode that does, with the fallback the job offers.
JOBS = {
    "synthesize-deep": ("/synthesize", {"messages": coding_run(12),
                                        "reasoning": {"synthesis": "deep"}}),
    "synthesize-auto": ("/synthesize", {"messages": coding_run(40, 4000),
                                        "required_tools": ["bash"],  # phase: synthesize
                                        "reasoning": {"synthesis": "auto",
                                                      "synthesis_model": "gpt-4o-mini"}}),
    "compress-history": ("/compress-history", {
        "messages": load_named("tau-airline-gpt4o-task002"), "mode": "deep"}),
    "summarize-trace": ("/summarize-trace", {
        "actions": to_actions(load_named("minisweagent-ds-chat-dev-pydicom__pydicom-901")),
        "mode": "deep"}),
    "summarize-recall": ("/summarize-recall", {"query": "Which seat?", "memories": MEMORIES,
                                               "mode": "deep"}),
    "reflect": ("/reflect", {"goal": "fix test_parse", "tool_calls": [CALL], "mode": "deep"}),
    "rescue": ("/rescue", {"messages": coding_run(6), "question": "What crashed?"}),
}
USAGES = [{"prompt_tokens": "many"}, {"prompt_tokens": -1}, {"completion_tokens": True},
          {"prompt_tokens": 1.5}, "lots"]


@pytest.mark.parametrize("usage", USAGES, ids=str)
@pytest.mark.parametrize("job", sorted(JOBS))
@respx.mock
async def test_malformed_usage_falls_back_like_a_failed_call(make_app, job, usage):
    reply = {**completion("Aisle [m1]."), "usage": usage}
    respx.post(URL).respond(200, json=reply)
    path, body = JOBS[job]
    async with serve(make_app(llm_providers=[PROVIDER], llm_retries=1)) as c:
        r = await c.post(path, json=body)
    assert r.status_code == 200, r.text
    out = r.json()
    reason = out["degraded_reason" if job == "rescue" else "fallback_reason"]
    assert out["degraded"] and reason.startswith("bad_response"), out
    assert "usage" in reason


@respx.mock
async def test_well_formed_usage_without_some_fields_is_fine(make_app):
    respx.post(URL).respond(200, json={**completion("Aisle [m1]."), "usage": {}})
    async with serve(make_app(llm_providers=[PROVIDER])) as c:
        out = (await c.post("/summarize-recall", json=JOBS["summarize-recall"][1])).json()
    assert not out["degraded"] and out["llm"]["input_tokens"] == 0


@respx.mock
async def test_an_unusable_reply_is_not_cached_a_used_one_is(make_app):
    route = respx.post(URL).respond(200, json=completion("ok"))  # no line for any tool
    path, body = JOBS["summarize-trace"]
    async with serve(make_app(llm_providers=[PROVIDER], llm_retries=1)) as c:
        first = (await c.post(path, json=body)).json()
        again = (await c.post(path, json=body)).json()
        assert first["degraded"] and again["degraded"]
        assert not again["cache"]["hit"] and route.call_count == 2  # asked anew, not served
        route.respond(200, json=completion("Aisle [m1]."))
        recall = JOBS["summarize-recall"][1]
        used = (await c.post("/summarize-recall", json=recall)).json()
        served = (await c.post("/summarize-recall", json=recall)).json()
    assert not used["degraded"] and served["cache"]["hit"] and route.call_count == 3
