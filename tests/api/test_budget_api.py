"""The token budget through the API: /synthesize's budget_tokens and trigger_tokens,
and the proxy's x-contextsynth-budget-tokens."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from app.adapters.upstream_memory import MemoryUpstream, Sent, UpstreamReply
from app.main import create_app
from app.settings import Settings
from tests.conftest import serve
from tests.support.build import coding_run, tool_turn

pytestmark = pytest.mark.anyio


def _long_run(turns: int) -> list[dict[str, Any]]:
    messages = coding_run(0)
    for i in range(turns):
        messages += tool_turn(f"c{i}", "bash", {"command": f"cat src/m{i}.py"},
                              "\n".join(f"v_{i}_{k} = f({k})" for k in range(300)))
    return messages


async def test_the_output_fits_the_budget_the_caller_gives(client):
    messages = _long_run(80)
    r = await client.post("/synthesize", json={"messages": messages, "budget_tokens": 4000})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["compacted"] and body["stats"]["tokens_after"] <= 4000
    assert any("Digest of" in (m["content"] or "") for m in body["messages"]
               if isinstance(m["content"], str))


async def test_a_budget_smaller_than_what_must_stay_is_a_422_naming_the_sizes(client):
    messages = _long_run(4)
    messages[0]["content"] = "Rules. " * 2000
    r = await client.post("/synthesize", json={"messages": messages, "budget_tokens": 300})
    assert r.status_code == 422
    problem = r.json()
    assert problem["type"].endswith("budget-too-small")
    assert problem["pointer"] == "/budget_tokens"
    assert "past 'budget_tokens' 300" in problem["detail"]


async def test_under_the_trigger_the_messages_come_back_as_sent(client):
    messages = _long_run(10)
    r = await client.post("/synthesize", json={"messages": messages,
                                               "trigger_tokens": 1_000_000})
    body = r.json()
    assert body["messages"] == messages and not body["compacted"]


async def test_a_known_models_window_caps_the_output_without_a_budget(make_app):
    # gpt-4: an 8,192-token window; a tenth of it is the cap.
    async with serve(make_app(budget_share=0.1)) as c:
        r = await c.post("/synthesize", json={"messages": _long_run(60), "model": "gpt-4"})
    assert r.json()["stats"]["tokens_after"] <= 819


async def test_the_cap_reads_the_window_from_litellms_model_map(make_app):
    # llama2 has a 4,096-token window in the map; a fifth of it is the cap.
    async with serve(make_app(budget_share=0.2)) as c:
        r = await c.post("/synthesize", json={"messages": _long_run(60),
                                              "model": "ollama/llama2"})
    body = r.json()
    assert body["compacted"] and body["stats"]["tokens_after"] <= 819


def _answer(_: Sent) -> UpstreamReply:
    return UpstreamReply.json({"id": "c", "object": "chat.completion", "choices": [
        {"index": 0, "finish_reason": "stop",
         "message": {"role": "assistant", "content": "ok"}}]})


async def test_the_proxy_fits_the_budget_its_header_gives(encoder):
    upstream = MemoryUpstream(_answer)
    app = create_app(Settings(), registry=CollectorRegistry(), encoder=encoder,
                     discover=lambda: [], environ={}, upstream=upstream)
    body = {"model": "gpt-4o-mini", "messages": _long_run(80)}
    async with serve(app) as c:
        fitted = await c.post("/v1/chat/completions", json=body,
                              headers={"authorization": "Bearer sk-x",
                                       "x-contextsynth-budget-tokens": "3000"})
        bad = await c.post("/v1/chat/completions", json=body,
                           headers={"authorization": "Bearer sk-x",
                                    "x-contextsynth-budget-tokens": "lots"})
        nothing_fits = await c.post(
            "/v1/chat/completions",
            json={**body, "messages": [{"role": "system", "content": "Rules. " * 2000},
                                       *body["messages"][1:]]},
            headers={"authorization": "Bearer sk-x", "x-contextsynth-budget-tokens": "100"})
    assert fitted.status_code == 200
    assert int(fitted.headers["x-contextsynth-tokens-after"]) <= 3000
    assert bad.status_code == 400
    # Nothing fits: sent as it came, and the header says why.
    assert nothing_fits.status_code == 200
    assert nothing_fits.headers["x-contextsynth-compaction"] == "failed"
    assert "budget_tokens" in nothing_fits.headers["x-contextsynth-reason"]
    assert len(upstream.sent) == 2
