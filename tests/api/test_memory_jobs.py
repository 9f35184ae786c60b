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
@pytest.mark.parametrize("junk", ["ok", "I'm sorry, I couldn't find that information.",
                                  "Mia likes the aisle."])
async def test_recall_junk_falls_back_to_extractive_and_is_not_cached(llm_client, junk):
    route = respx.post(URL).respond(200, json=completion(junk))
    request = {"query": f"Which seat does Mia book? ({junk})", "memories": MEMORIES}
    body = (await llm_client.post("/summarize-recall", json=request)).json()
    # No citation and no INSUFFICIENT: no answer. The cited sentences stand in, marked.
    assert body["mode"] == "extractive" and body["degraded"] and not body["refused"]
    assert body["summary"] == "Mia always books an aisle seat. [m1]"
    assert "cites none of the memories" in body["fallback_reason"]
    route.respond(200, json=completion("Mia books the aisle [m1]."))
    healthy = (await llm_client.post("/summarize-recall", json=request)).json()
    assert not healthy["cache_hit"] and not healthy["degraded"]
    assert healthy["mode"] == "deep" and healthy["summary"] == "Mia books the aisle [m1]."
    assert route.call_count == 2


@respx.mock
async def test_recall_citation_before_its_claim_cites_that_claim(llm_client):
    kafka = [{"id": "m1", "text": "Kafka 3.6 runs with 12 partitions on topic orders."}]
    respx.post(URL).respond(200, json=completion(
        "[m1] Kafka 3.6 runs with 12 partitions on topic orders."))
    body = (await llm_client.post("/summarize-recall", json={
        "query": "How is Kafka set up?", "memories": kafka})).json()
    assert body["summary"] == "Kafka 3.6 runs with 12 partitions on topic orders [m1]."
    assert body["removed_claims"] == [] and body["sources_used"] == ["m1"]


@respx.mock
@pytest.mark.parametrize(("reply", "summary", "removed"), [
    ("Kafka 2.8 runs on topic orders [m1]. Mia lives in Austin [m2].",
     "Mia lives in Austin [m2].", ["Kafka 2.8 runs on topic orders"]),
    ("Kafka 3.6 runs with 12 partitions on 40 brokers [m1]. Mia lives in Austin [m2].",
     "Mia lives in Austin [m2].", ["Kafka 3.6 runs with 12 partitions on 40 brokers"]),
])
async def test_recall_claims_whose_numbers_their_memory_lacks_are_removed(
        llm_client, reply, summary, removed):
    memories = [{"id": "m1", "text": "Kafka 3.6 runs with 12 partitions on topic orders."},
                MEMORIES[1]]
    respx.post(URL).respond(200, json=completion(reply))
    body = (await llm_client.post("/summarize-recall", json={
        "query": f"How is Kafka set up, where does Mia live? {reply}",
        "memories": memories})).json()
    assert body["summary"] == summary and body["removed_claims"] == removed
    assert body["sources_used"] == ["m2"] and not body["refused"]


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
    assert [c["outcome"] for c in enriched] == ["timeout", "failure"]
    assert [c["cost"] for c in enriched] == [0.002, 0.001]


@respx.mock
async def test_reflect_deep_prompt_says_how_each_call_ended(llm_client):
    reply = {"calls": [REFLECTION["calls"][0]] * 2, "synthesis": "both failed",
             "progress_assessment": "stuck"}
    route = respx.post(URL).respond(200, json=completion(json.dumps(reply)))
    calls = [{"tool": "deploy", "params": {"env": "prod"}, "output": "done",
              "outcome": "failure", "duration_ms": 1200, "cost": {"usd": 0.02}},
             {"tool": "web_search", "params": {"q": "kafka"}, "output": "",
              "outcome": "timeout", "duration_ms": 30000}]
    body = (await llm_client.post("/reflect", json={"goal": "ship the release",
                                                    "tool_calls": calls})).json()
    user = json.loads(route.calls.last.request.content)["messages"][1]["content"]
    assert 'deploy({"env": "prod"}) -> done\n   outcome: failure, took 1200 ms, cost 0.02' \
        in user
    assert 'web_search({"q": "kafka"}) -> (no output)\n   outcome: timeout, took 30000 ms' \
        in user
    assert body["mode"] == "deep"
    assert [c["outcome"] for c in body["record"]["calls"]] == ["failure", "timeout"]


async def test_reflect_fast_says_a_timeout_timed_out(client):
    body = (await client.post("/reflect", json={"goal": "find kafka docs", "mode": "fast",
                                                "tool_calls": [{
                                                    "tool": "web_search", "output": "",
                                                    "outcome": "timeout",
                                                    "duration_ms": 30000}]})).json()
    call = body["record"]["calls"][0]
    assert call["outcome"] == "timeout"
    assert "timed out after 30000 ms" in call["insights"][0]


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


async def test_the_seeds_field_names_are_taken(client):
    call = {"tool": "bash", "params": {"command": "pytest -x"},
            "raw_output": "FAILED test_parse - ValueError: bad month 13",
            "execution_time": 1500, "tool_selection_rationale": "see which test fails"}
    r = await client.post("/reflect", json={"goal": "fix test_parse", "tool_calls": [call],
                                            "history": [{"calls": [call]}], "mode": "fast"})
    assert r.status_code == 200, r.text
    (out,) = r.json()["record"]["calls"]
    assert out["output"] == call["raw_output"] and out["duration_ms"] == 1500
    assert out["rationale"] == "see which test fails" and out["outcome"] == "error"
    memories = [{"id": "m1", "text": "Mia always books an aisle seat.",
                 "depth_layer": "episodic"}]
    recalled = await client.post("/summarize-recall", json={
        "query": "Which seat does Mia like?", "memories": memories, "mode": "extractive"})
    assert recalled.status_code == 200, recalled.text
    assert recalled.json()["citations"][0]["layer"] == "episodic"
    both = await client.post("/reflect", json={"goal": "g", "tool_calls": [
        {"tool": "bash", "output": "a", "raw_output": "b"}]})
    assert both.status_code == 422  # one name for one field
