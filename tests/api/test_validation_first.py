"""Every job validates the same way, before it looks for an LLM; hints name real modes."""

import pytest

from tests.api.test_deep import PROVIDER
from tests.api.test_memory_jobs import CALL, MEMORIES
from tests.conftest import serve

pytestmark = pytest.mark.anyio

ORPHAN = [{"role": "user", "content": "What is my balance?"},
          {"role": "tool", "tool_call_id": "zz", "content": "42"}]
NOT_JSON = [{"role": "user", "content": "Read a.py"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function",
                 "function": {"name": "read_file", "arguments": "{path: a.py"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "print(1)"}]
JOBS = {
    "synthesize": ("/synthesize", {}),
    "compress-history": ("/compress-history", {}),
    "rescue": ("/rescue", {"question": "What is the balance?"}),
    "rescue-dry-run": ("/rescue", {"question": "What is the balance?", "dry_run": True}),
}


@pytest.mark.parametrize("with_llm", [False, True], ids=["no-llm", "llm"])
@pytest.mark.parametrize("job", sorted(JOBS))
@pytest.mark.parametrize(("messages", "needle"), [(ORPHAN, "tool result for call id 'zz'"),
                                                  (NOT_JSON, "arguments that are not JSON")],
                         ids=["orphan", "not-json"])
async def test_bad_transcripts_are_a_422_with_or_without_an_llm(make_app, job, with_llm,
                                                                messages, needle):
    path, extra = JOBS[job]
    settings = {"llm_providers": [PROVIDER]} if with_llm else {}
    async with serve(make_app(**settings)) as c:
        r = await c.post(path, json={"messages": messages, **extra})
    assert r.status_code == 422, r.text
    problem = r.json()
    assert needle in problem["detail"] and problem["pointer"] == "/messages/1"


@pytest.mark.parametrize(("path", "body", "modes", "absent"), [
    ("/synthesize", {"messages": NOT_JSON[:1], "reasoning": {"synthesis": "deep"}},
     "'fast', 'custom' or 'off'", None),
    ("/compress-history", {"messages": NOT_JSON[:1], "mode": "deep"}, "'fast'", "custom"),
    ("/summarize-trace", {"actions": [{"action": "ls"}], "mode": "deep"}, "'fast'", "custom"),
    ("/summarize-recall", {"query": "seat?", "memories": MEMORIES, "mode": "deep"},
     "'extractive'", "custom"),
    ("/reflect", {"goal": "fix it", "tool_calls": [CALL], "mode": "deep"}, "'fast'", "custom"),
])
async def test_the_no_llm_hint_names_only_the_endpoints_own_modes(client, path, body, modes,
                                                                  absent):
    r = await client.post(path, json=body)
    assert r.status_code == 503
    detail = r.json()["detail"]
    assert f"ask for mode {modes}." in detail and "CONTEXTSYNTH_LLM_PROVIDERS" in detail
    if absent is not None:
        assert absent not in detail
