import pytest

from app.engine.reading.factscan import MOST_FACTS
from tests.support.build import coding_run, tool_turn
from tests.support.convert import to_anthropic
from tests.support.corpus import load_named
from tests.support.invariants import check_anthropic, check_openai

pytestmark = pytest.mark.anyio


async def test_fast_synthesis_of_a_real_run(client):
    messages = load_named("minisweagent-ds-chat-dev-pydicom__pydicom-901")
    r = await client.post("/synthesize", json={"messages": messages, "model": "gpt-4o-mini",
                                               "iteration": 60, "max_iterations": 100})
    assert r.status_code == 200, r.text
    body = r.json()
    check_openai(messages, body["messages"])
    assert body["format"] == "openai" and body["compacted"]
    assert body["mode"] == "fast" and body["requested_mode"] == "auto"
    assert "no LLM provider is configured" in body["mode_reason"]
    assert (body["tier"], body["tier_source"]) == ("mid", "model")
    stats = body["stats"]
    assert stats["messages_before"] == len(messages)
    assert stats["messages_after"] == len(body["messages"])
    assert stats["tokens_after"] < stats["tokens_before"] and stats["reduction"] > 0.5
    handles = {s["handle"] for s in body["receipt"]["dropped"]}
    assert any(h in body["messages"][2]["content"] for h in handles)
    assert body["signals"]["tools_called"]["bash"] > 10
    assert body["signals"]["task"].startswith("<pr_description>")
    assert body["messages"][-1]["content"] == body["nudge"]
    assert body["cache"] == {"hit": False, "key_age_seconds": None}
    assert "system" not in body


async def test_anthropic_in_anthropic_out(client):
    payload = to_anthropic(load_named("sweagent-ctf-crypto-katy"))
    r = await client.post("/synthesize", json={**payload, "tier": "local"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["format"] == "anthropic" and body["tier_source"] == "request"
    check_anthropic(payload, {"system": body["system"], "messages": body["messages"]})


async def test_resolved_config_says_where_each_field_came_from(client):
    r = await client.post("/synthesize", json={
        "messages": coding_run(6), "strategy": "planExecute",
        "reasoning": {"synthesis": "fast", "synthesis_temperature": 0.2,
                      "strategies": {"planExecute": {"synthesis": "custom",
                                                     "synthesis_strategy": "observation-mask"},
                                     "reactive": {"synthesis": "off"}}}})
    assert r.status_code == 200, r.text
    config = r.json()["resolved_config"]
    assert config["synthesis"] == {"value": "custom", "source": "strategies.planExecute"}
    assert config["synthesis_strategy"]["source"] == "strategies.planExecute"
    assert config["synthesis_temperature"] == {"value": 0.2, "source": "top-level"}
    assert r.json()["mode"] == "custom"


async def test_adaptive_ignores_strategy_bundles(client):
    r = await client.post("/synthesize", json={
        "messages": coding_run(6), "strategy": "adaptive",
        "reasoning": {"strategies": {"reactive": {"synthesis": "off"}}}})
    assert r.json()["resolved_config"]["synthesis"] == {"value": "auto", "source": "default"}


@pytest.mark.parametrize("strategy", ["adaptive", "reactive"])
async def test_a_bundle_for_adaptive_is_refused_not_ignored(client, strategy):
    r = await client.post("/synthesize", json={
        "messages": coding_run(6), "strategy": strategy,
        "reasoning": {"strategies": {"adaptive": {"synthesis": "off"}}}})
    assert r.status_code == 422
    problem = r.json()
    assert problem["errors"][0]["pointer"] == "/reasoning/strategies"
    assert "strategies.adaptive would never be used" in problem["detail"]


async def test_off_mode_returns_the_messages_untouched(client):
    messages = coding_run(8)
    r = await client.post("/synthesize", json={"messages": messages,
                                               "reasoning": {"synthesis": "off"}})
    body = r.json()
    assert body["messages"] == messages and not body["compacted"]
    assert body["phase"] == "gather" and body["stats"]["reduction"] == 0


async def test_required_tools_drive_phase_and_nudge(client):
    messages = [{"role": "user", "content": "Refund order 77."}]
    messages += tool_turn("a", "get_order", {"id": 77}, '{"status": "delivered"}' * 40)
    r = await client.post("/synthesize", json={
        "messages": messages, "required_tools": ["get_order", "get_policy", "issue_refund"],
        "output_tools": ["issue_refund"]})
    body = r.json()
    assert body["phase"] == "gather"
    assert body["signals"]["required_missing"] == ["get_policy"]
    assert "get_policy" in body["nudge"]


async def test_deep_without_an_llm_is_a_503_that_says_how_to_fix_it(client):
    r = await client.post("/synthesize", json={"messages": coding_run(5),
                                               "reasoning": {"synthesis": "deep"}})
    assert r.status_code == 503
    assert r.headers["content-type"] == "application/problem+json"
    problem = r.json()
    assert problem["type"].endswith("llm-not-configured")
    assert "CONTEXTSYNTH_LLM_PROVIDERS" in problem["detail"] and "'fast'" in problem["detail"]


async def test_steer_false_leaves_no_nudge_message(client):
    r = await client.post("/synthesize", json={"messages": coding_run(8), "steer": False})
    body = r.json()
    assert body["nudge"] is None
    assert not body["messages"][-1]["content"].startswith("[contextsynth]")


async def test_the_receipt_says_when_a_transcript_held_more_facts_than_it_reads(client):
    # A log of short distinct error lines, the densest in facts a body can be: the
    # receipt reads a bounded number of them and says so, instead of holding tens of
    # times the body's size.
    dense = "\n".join(f"error: {n}" for n in range(3 * MOST_FACTS))
    messages = coding_run(2)
    for n in range(4):
        messages += tool_turn(f"d{n}", "bash", {"cmd": f"cat run{n}.log"}, dense)
    messages += coding_run(6)[2:]
    r = await client.post("/synthesize", json={"messages": messages})
    assert r.status_code == 200, r.text
    lost = r.json()["receipt"]["lost_facts"]
    assert lost["complete"] is False
    assert 0 < lost["total"] <= 4 * MOST_FACTS
    assert len(lost["errors"]) == 50 and lost["errors"][0].startswith("error: ")

    plain = await client.post("/synthesize", json={"messages": coding_run(12)})
    assert plain.json()["receipt"]["lost_facts"]["complete"] is True
