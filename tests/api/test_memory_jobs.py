"""/summarize-recall and /reflect over HTTP, with the LLM faked at the HTTP boundary."""

import json

import httpx
import pytest
import respx

from tests.api.test_deep import PROVIDER, URL, completion
from tests.conftest import serve

pytestmark = pytest.mark.anyio
MEMORIES = [{"id": "m1", "text": "Mia always books an aisle seat.", "score": 0.9,
             "layer": "episodic"},
            {"id": "m2", "text": "Mia lives in Austin.", "score": 0.3}]
REFLECTION = {"calls": [{"insights": ["the month slice is off by one"],
                         "learning": "int(s[5:7]) reads the day", "relevance": "high",
                         "next_suggested_actions": ["fix the slice in dates.py"]}],
              "synthesis": "the cause is found", "progress_assessment": "advancing"}
CALL = {"tool": "bash", "params": {"command": "pytest -x"},
        "output": "FAILED test_parse - ValueError: bad month 13"}


@pytest.fixture
async def llm_client(make_app):
    async with serve(make_app(llm_providers=[PROVIDER], llm_retries=1)) as c:
        yield c


@respx.mock
async def test_recall_cites_and_drops_unknown_ids(llm_client):
    route = respx.post(URL).respond(200, json=completion(
        "Mia prefers the aisle [m1]; she once flew business [m7]."))
    body = (await llm_client.post("/summarize-recall", json={
        "query": "Which seat does Mia like?", "memories": MEMORIES})).json()
    # The claim only an invented id supported goes, with its citation and punctuation.
    assert body["mode"] == "deep" and body["summary"] == "Mia prefers the aisle [m1]."
    assert body["removed_citations"] == ["m7"] and body["sources_used"] == ["m1"]
    assert not body["refused"]
    assert body["citations"] == [{"memory_id": "m1", "snippet": MEMORIES[0]["text"],
                                  "score": 0.9, "layer": "episodic"}]
    prompt = json.loads(route.calls.last.request.content)["messages"]
    user = prompt[1]["content"]
    assert "[m1] Mia always books" in user
    assert "ids: m1, m2" in user and "<query>\nWhich seat does Mia like?\n</query>" in user
    assert "[m3][m12]" in prompt[0]["content"]  # how to cite several


@respx.mock
async def test_recall_with_only_invented_citations_is_refused(llm_client):
    respx.post(URL).respond(200, json=completion(
        "Mia likes aisle seats [m7] and lives in Austin [m9]."))
    body = (await llm_client.post("/summarize-recall", json={
        "query": "Tell me about Mia (invented ids)", "memories": MEMORIES})).json()
    assert body["refused"] and body["citations"] == [] and body["sources_used"] == []
    assert body["removed_citations"] == ["m7", "m9"]
    assert "Austin" not in body["summary"] and "m7, m9" in body["summary"]


@respx.mock
async def test_recall_refusal(llm_client):
    respx.post(URL).respond(200, json=completion("INSUFFICIENT: no meal preference is known."))
    body = (await llm_client.post("/summarize-recall", json={
        "query": "What does Mia eat?", "memories": MEMORIES})).json()
    assert body["refused"] and body["citations"] == []


@respx.mock
async def test_recall_cache_hit_then_miss_when_a_memory_changes(llm_client):
    route = respx.post(URL).respond(200, json=completion("Aisle [m1]."))
    request = {"query": "Which seat? (cache test)", "memories": MEMORIES}
    first = (await llm_client.post("/summarize-recall", json=request)).json()
    second = (await llm_client.post("/summarize-recall", json=request)).json()
    changed = [{**MEMORIES[0], "text": "Mia now prefers a window seat."}, MEMORIES[1]]
    third = (await llm_client.post("/summarize-recall", json={**request,
                                                               "memories": changed})).json()
    assert [first["cache_hit"], second["cache_hit"], third["cache_hit"]] == [False, True, False]
    assert route.call_count == 2


async def test_recall_extractive_needs_no_llm(client):
    body = (await client.post("/summarize-recall", json={
        "query": "Where does Mia live?", "memories": MEMORIES, "mode": "extractive"})).json()
    assert body["mode"] == "extractive" and body["summary"] == "Mia lives in Austin. [m2]"
    assert body["sources_used"] == ["m2"]


async def test_recall_deep_without_a_provider_is_a_503(client):
    r = await client.post("/summarize-recall", json={"query": "x", "memories": MEMORIES,
                                                     "mode": "deep"})
    assert r.status_code == 503


async def test_reflect_fast_flags_a_loop_by_the_third_iteration(client):
    history = []
    stuck = []
    for n in range(3):
        body = (await client.post("/reflect", json={
            "goal": "fix test_parse", "iteration": n, "tool_calls": [CALL],
            "history": history, "mode": "fast"})).json()
        stuck.append(body["stuck"])
        history.append(body["record"])  # an earlier answer's record goes back as history
    assert stuck == [False, False, True]
    assert body["recovery_prompt"] and body["record"]["calls"][0]["outcome"] == "error"


@respx.mock
async def test_reflect_deep_with_valid_json(llm_client):
    respx.post(URL).respond(200, json=completion(json.dumps(REFLECTION)))
    body = (await llm_client.post("/reflect", json={"goal": "fix test_parse",
                                                    "tool_calls": [CALL]})).json()
    assert body["mode"] == "deep" and not body["degraded"]
    assert body["record"]["calls"][0]["relevance"] == "high"
    assert body["record"]["synthesis"] == "the cause is found"


@respx.mock
async def test_reflect_repairs_invalid_json_once(llm_client):
    route = respx.post(URL).mock(side_effect=[
        httpx.Response(200, json=completion("Sure! Here it is: {calls: oops")),
        httpx.Response(200, json=completion(json.dumps(REFLECTION)))])
    body = (await llm_client.post("/reflect", json={"goal": "fix", "tool_calls": [CALL]})).json()
    assert body["mode"] == "deep" and not body["degraded"]
    repair = json.loads(route.calls[1].request.content)["messages"]
    assert repair[-2]["role"] == "assistant" and "not valid JSON" in repair[-1]["content"]


@respx.mock
async def test_reflect_falls_back_after_a_failed_repair(llm_client):
    respx.post(URL).respond(200, json=completion("still not json"))
    body = (await llm_client.post("/reflect", json={"goal": "fix", "tool_calls": [CALL]})).json()
    assert body["mode"] == "fast" and body["degraded"]
    assert body["fallback_reason"].startswith("bad_response")
    assert body["record"]["calls"][0]["relevance"] == "low"


@respx.mock
async def test_reflect_falls_back_on_an_llm_failure(llm_client):
    respx.post(URL).respond(500, json={"error": {"message": "boom"}})
    body = (await llm_client.post("/reflect", json={"goal": "fix", "tool_calls": [CALL]})).json()
    assert body["mode"] == "fast" and body["fallback_reason"].startswith("server_error")


async def test_an_unknown_provider_points_where_the_request_named_it(llm_client):
    reflect = await llm_client.post("/reflect", json={
        "goal": "fix", "tool_calls": [CALL], "mode": "deep", "synthesis_provider": "nope"})
    recall = await llm_client.post("/summarize-recall", json={
        "query": "Where?", "memories": MEMORIES,
        "synthesis_provider": "nope"})
    for r in (reflect, recall):
        assert r.status_code == 422 and r.json()["pointer"] == "/synthesis_provider", r.text
    from tests.support.build import coding_run

    for reasoning, pointer in (
            ({"synthesis": "deep", "synthesis_provider": "nope"},
             "/reasoning/synthesis_provider"),
            ({"synthesis": "deep", "strategies": {"reactive": {"synthesis_provider": "nope"}}},
             "/reasoning/strategies/reactive/synthesis_provider")):
        r = await llm_client.post("/synthesize", json={
            "messages": coding_run(12), "strategy": "reactive", "reasoning": reasoning})
        assert r.status_code == 422 and r.json()["pointer"] == pointer, r.text


async def test_reflect_takes_a_record_as_callers_send_it(client):
    calls = [{"tool": "pytest", "output": "took too long", "outcome": "timeout",
              "cost": {"usd": 0.002, "tokens": 812}},
             {"tool": "bash", "output": "exit 1", "outcome": "failure", "cost": 0.001}]
    r = await client.post("/reflect", json={"goal": "fix test_parse", "tool_calls": calls,
                                            "mode": "fast"})
    assert r.status_code == 200, r.text
    enriched = r.json()["record"]["calls"]
    assert [c["outcome"] for c in enriched] == ["error", "error"]
    assert [c["cost"] for c in enriched] == [0.002, 0.001]


async def test_reflect_keeps_when_why_and_what_the_user_said(client):
    calls = [{"tool": "bash", "params": {"command": "pytest -x"},
              "output": "FAILED test_parse - ValueError: bad month",
              "timestamp": "2026-11-26T07:30:05Z", "rationale": "see which test fails first"},
             {"tool": "ls", "output": "a.py", "timestamp": 1795678210}]
    r = await client.post("/reflect", json={
        "goal": "fix test_parse", "tool_calls": calls, "mode": "fast",
        "timestamp": "2026-11-26T07:30:00+00:00", "user_feedback": "Look at dates.py first.",
        "context_tokens": 60})
    assert r.status_code == 200, r.text
    body = r.json()
    record = body["record"]
    assert record["timestamp"].startswith("2026-11-26T07:30:00")
    assert record["mode"] == "fast" and record["user_feedback"] == "Look at dates.py first."
    assert [c["timestamp"][:19] for c in record["calls"]] == ["2026-11-26T07:30:05",
                                                              "2026-11-26T07:30:10"]
    assert record["calls"][0]["rationale"] == "see which test fails first"
    assert body["reasoning_context"].startswith("user feedback: Look at dates.py first.\n")
    # The record goes back as history as it is, new fields and all.
    again = await client.post("/reflect", json={
        "goal": "fix test_parse", "tool_calls": calls, "mode": "fast", "history": [record]})
    assert again.status_code == 200, again.text


@pytest.mark.parametrize("when", [0, -5, 0.0, True, "1795678210"])
@pytest.mark.parametrize("where", ["iteration", "call"])
async def test_reflect_refuses_a_timestamp_its_schema_does_not_take(client, when, where):
    """The schema takes an ISO 8601 string or seconds since the epoch past zero: 0 is an
    unset clock, not 1970, and the service says so as the schema does."""
    call = {"tool": "ls", "output": "a.py"}
    body = {"goal": "fix test_parse", "mode": "fast", "tool_calls": [call]}
    if where == "iteration":
        body["timestamp"] = when
    else:
        call["timestamp"] = when
    r = await client.post("/reflect", json=body)
    assert r.status_code == 422, r.text
    assert r.json()["errors"][0]["pointer"].endswith("/timestamp")


async def test_reflect_refuses_a_context_budget_too_small_to_say_anything(client):
    r = await client.post("/reflect", json={"goal": "fix", "tool_calls": [CALL],
                                            "context_tokens": 10})
    assert r.status_code == 422
    assert r.json()["errors"] == [{"pointer": "/context_tokens",
                                   "detail": "Input should be greater than or equal to 50"}]
