"""/summarize-trace over HTTP."""

import json

import pytest
import respx

from tests.api.test_deep import PROVIDER, URL, completion
from tests.conftest import serve
from tests.engine.test_trace import SCRATCHPAD
from tests.support.corpus import load_named
from tests.support.traces import to_actions

pytestmark = pytest.mark.anyio
ACTIONS = to_actions(load_named("minisweagent-ds-chat-dev-pydicom__pydicom-901"))


async def test_fast_summarizes_a_real_trace(client):
    r = await client.post("/summarize-trace", json={"actions": ACTIONS, "mode": "fast"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["strategy"] == "deterministic" and body["mode"] == "fast"
    assert body["scratchpad"].startswith("[PREVIOUS ACTIONS SUMMARY]\nbash (")
    assert body["stats"]["actions_total"] == len(ACTIONS)
    assert body["stats"]["actions_summarized"] == len(ACTIONS) - 3  # a large trace keeps 3
    assert body["stats"]["reduction"] > 0.5
    assert [a["action_input"] for a in body["recent"]] == [
        a["action_input"] for a in ACTIONS[-3:]]


async def test_scratchpad_with_request_thresholds(client):
    r = await client.post("/summarize-trace", json={"scratchpad": SCRATCHPAD, "trigger": 2,
                                                    "keep": 1, "min_saving": 0})
    body = r.json()
    assert body["strategy"] == "deterministic", body
    assert [g["tool"] for g in body["groups"]] == ["list_files", "read_file"]
    assert body["recent"][0]["action_input"] == "src/missing.py"


async def test_settings_supply_the_defaults(make_app):
    async with serve(make_app(trace_trigger=2, trace_keep=1, trace_min_saving=0)) as c:
        body = (await c.post("/summarize-trace", json={"scratchpad": SCRATCHPAD})).json()
    assert body["strategy"] == "deterministic" and len(body["recent"]) == 1


@respx.mock
async def test_llm_lines_per_tool(make_app):
    async with serve(make_app(llm_providers=[PROVIDER])) as c:
        fast = (await c.post("/summarize-trace", json={"actions": ACTIONS, "mode": "fast"}))
        (group,) = fast.json()["groups"]
        keeps = ", ".join(group["paths"] + group["errors"])
        route = respx.post(URL).respond(200, json=completion(
            f"bash (150 calls): explored {keeps}; patched the logger, tests pass"))
        body = (await c.post("/summarize-trace", json={"actions": ACTIONS})).json()
    assert body["strategy"] == "llm" and body["mode"] == "deep"
    count = len(ACTIONS) - 3
    assert body["groups"][0]["summary"].startswith(f"bash ({count} calls): explored ")
    assert "./pydicom/config.py" in body["groups"][0]["paths"]
    prompt = json.loads(route.calls.last.request.content)["messages"]
    assert "<transcript>" in prompt[1]["content"]
    assert f"bash ({count} calls)\nThought:" in prompt[1]["content"]


@respx.mock
async def test_llm_lines_that_drop_paths_or_errors_fall_back(make_app):
    respx.post(URL).respond(200, json=completion("bash (150 calls): explored, patched"))
    async with serve(make_app(llm_providers=[PROVIDER])) as c:
        body = (await c.post("/summarize-trace", json={"actions": ACTIONS})).json()
    assert body["strategy"] == "deterministic" and body["degraded"]


@respx.mock
async def test_unusable_reply_falls_back_to_deterministic(make_app):
    respx.post(URL).respond(200, json=completion("I cannot help with that."))
    async with serve(make_app(llm_providers=[PROVIDER])) as c:
        body = (await c.post("/summarize-trace", json={"actions": ACTIONS})).json()
    assert body["strategy"] == "deterministic" and body["degraded"]
    assert body["fallback_reason"].startswith("bad_response")


@respx.mock
async def test_small_traces_never_call_the_llm(make_app):
    route = respx.post(URL).respond(200, json=completion())
    async with serve(make_app(llm_providers=[PROVIDER])) as c:
        body = (await c.post("/summarize-trace", json={
            "scratchpad": SCRATCHPAD, "trigger": 2, "keep": 1, "min_saving": 0})).json()
    assert route.call_count == 0 and body["strategy"] == "deterministic"


@pytest.mark.parametrize(("body", "needle"), [
    ({"actions": ACTIONS[:2], "scratchpad": SCRATCHPAD}, "exactly one of"),
    ({"scratchpad": "Thought: hmm"}, "'Action:'"),
    ({"actions": [{"action": ""}]}, "/actions/0/action"),
    ({"actions": ACTIONS[:2], "min_saving": 2}, "/min_saving"),
])
async def test_bad_requests(client, body, needle):
    r = await client.post("/summarize-trace", json=body)
    assert r.status_code == 422
    assert needle in r.text


async def test_deep_without_a_provider(client):
    r = await client.post("/summarize-trace", json={"actions": ACTIONS, "mode": "deep"})
    assert r.status_code == 503


async def test_keeping_everything_leaves_the_trace_as_it_is(client):
    body = (await client.post("/summarize-trace", json={
        "actions": ACTIONS[:6], "trigger": 2, "keep": 6})).json()
    assert body["strategy"] == "none" and "nothing older" in body["reason"]


async def test_every_path_an_older_action_named_stays_in_its_line(client):
    from app.engine.jobs.trace.summarizer import paths_in

    r = await client.post("/summarize-trace", json={"actions": ACTIONS, "mode": "fast"})
    scratchpad = r.json()["scratchpad"]
    older = ACTIONS[:-3]
    named = {p for a in older for p in paths_in(a["action_input"])}
    assert "./pydicom/datadict.py" in named
    assert named and all(p in scratchpad for p in named), sorted(
        p for p in named if p not in scratchpad)


@respx.mock
async def test_llm_lines_that_keep_no_identifier_fall_back(make_app):
    actions = to_actions(load_named("tau-airline-gpt4o-task033-trial0"))[:12]
    route = respx.post(URL).respond(200, json=completion(
        "get_user_details (1 call): looked up the user\n"
        "get_reservation_details (5 calls): read the reservations\n"
        "search_direct_flight (1 call): searched a flight"))
    async with serve(make_app(llm_providers=[PROVIDER], llm_retries=1)) as c:
        body = (await c.post("/summarize-trace", json={"actions": actions})).json()
    assert route.call_count == 1
    assert body["strategy"] == "deterministic" and body["degraded"]
    reason = body["fallback_reason"]
    assert "get_reservation_details: the line leaves out every identifier" in reason
    assert "NM1VX1" in reason
    assert "NM1VX1" in body["scratchpad"] and "WUNA5K" in body["scratchpad"]


REACT = ("Question: why does test_parse fail?\n"
         "Thought: look around\nAction: list_files\nAction Input: src/\n"
         "Observation: a.py b.py\n"
         "Thought: read it\nAction: read_file\nAction Input: src/a.py\n"
         "Observation: def parse(s): return int(s[5:7])\n"
         "Thought: run the tests\nAction: run_tests\nAction Input: tests/\n"
         "Observation: FAILED tests/test_a.py::test_parse - ValueError: bad month")


@pytest.mark.parametrize("ending", ["Thought: next I should check the config in settings.py",
                                    "Thought: I know it now\nFinal Answer: the slice is off"])
async def test_a_scratchpad_keeps_its_question_and_its_newest_words(client, ending):
    scratchpad = f"{REACT}\n{ending}"
    body = (await client.post("/summarize-trace", json={"scratchpad": scratchpad})).json()
    assert body["strategy"] == "none"
    assert body["scratchpad"] == scratchpad
    assert body["stats"]["chars_before"] == len(scratchpad) == body["stats"]["chars_after"]
    summarized = (await client.post("/summarize-trace", json={
        "scratchpad": scratchpad, "trigger": 2, "keep": 1, "min_saving": 0})).json()
    assert summarized["strategy"] == "deterministic", summarized
    out = summarized["scratchpad"]
    assert out.startswith("Question: why does test_parse fail?\n[PREVIOUS ACTIONS SUMMARY]")
    assert out.endswith(f"ValueError: bad month\n{ending}")
    assert [a["action"] for a in summarized["recent"]] == ["run_tests"]


async def test_outcomes_are_those_reflect_takes(client):
    actions = [{"action": "web_search", "action_input": f"kafka {i}", "outcome": outcome,
                "observation": ("results " * 60) if outcome == "success" else ""}
               for i, outcome in enumerate(["failure", "timeout", "success"] * 4)]
    r = await client.post("/summarize-trace", json={"actions": actions, "trigger": 4,
                                                    "keep": 2, "min_saving": 0})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["strategy"] == "deterministic"
    (group,) = body["groups"]
    assert group["summary"].count("-> failed") == 7  # every failure and timeout of the 10
    assert [a["outcome"] for a in body["recent"]] == ["timeout", "success"]


@pytest.mark.parametrize("budget", [300, 800, 2000])
async def test_the_output_fits_the_budget(client, budget):
    # Ten recent actions kept whole are past every one of these budgets.
    r = await client.post("/summarize-trace", json={
        "actions": ACTIONS, "mode": "fast", "keep": 10, "large_keep": 10,
        "budget_tokens": budget})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["stats"]["tokens_after"] <= budget
    assert f"cut to the budget of {budget} tokens" in body["reason"]
    # What left the recent actions is in the summary, behind its handle.
    assert body["stats"]["actions_summarized"] + len(body["recent"]) == len(ACTIONS)
    assert body["recent"][-1]["action_input"] == ACTIONS[-1]["action_input"]


async def test_over_the_budget_a_trace_under_the_trigger_is_summarized(client):
    actions = ACTIONS[:6]
    whole = (await client.post("/summarize-trace", json={
        "actions": actions, "mode": "fast", "trigger": 50})).json()
    assert whole["strategy"] == "none"
    budget = whole["stats"]["tokens_before"] // 2
    body = (await client.post("/summarize-trace", json={
        "actions": actions, "mode": "fast", "trigger": 50, "budget_tokens": budget})).json()
    assert body["strategy"] != "none" and body["stats"]["tokens_after"] <= budget


async def test_a_budget_below_the_scratchpads_own_text_is_a_422(client):
    r = await client.post("/summarize-trace", json={
        "scratchpad": "Question: " + "why " * 500 + "\n" + SCRATCHPAD, "budget_tokens": 50})
    assert r.status_code == 422
    assert r.json()["type"].endswith("budget-too-small")
    assert r.json()["pointer"] == "/budget_tokens"
