"""Where the agent stands, as the API reports it: what ran, in whatever shape, and what
it delivered; the nudge never contradicts itself."""

from __future__ import annotations

import json

import pytest

from tests.support.build import tool_turn
from tests.support.corpus import load_named

pytestmark = pytest.mark.anyio


async def test_a_required_tool_that_ran_and_failed_is_not_reported_missing(client):
    # docs/api.md's first example, as it is written there.
    messages = [
        {"role": "system", "content": "You fix bugs with bash."},
        {"role": "user", "content": "Fix the failing test in tests/test_dates.py."},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
         "function": {"name": "bash", "arguments": "{\"command\": \"pytest -x -q\"}"}}]},
        {"role": "tool", "tool_call_id": "c1",
         "content": "FAILED tests/test_dates.py::test_parse"},
    ]
    r = await client.post("/synthesize", json={
        "messages": messages, "model": "gpt-4o-mini", "iteration": 1, "max_iterations": 30,
        "required_tools": ["bash"], "reasoning": {"synthesis": "fast"}})
    body = r.json()
    signals = body["signals"]
    assert signals["tools_called"] == {"bash": 1}
    assert signals["required_missing"] == [] and signals["required_failed"] == ["bash"]
    assert body["phase"] == "gather"
    # One instruction: fix what failed and run it again, not "gather bash".
    assert "still missing" not in body["nudge"]
    assert "ran but failed: bash" in body["nudge"]


async def test_a_reproduction_script_is_not_the_deliverable(client):
    # SWE-agent has listed files, opened setup.py, installed, and created reproduce.py.
    messages = load_named("sweagent-fc-marshmallow-code__marshmallow-1867")[:12]
    assert "reproduce.py" in json.dumps(messages)
    r = await client.post("/synthesize", json={"messages": messages})
    body = r.json()
    assert body["signals"]["outputs_done"] == []
    assert body["phase"] != "verify"
    assert "deliverable exists" not in (body["nudge"] or "")


async def test_a_failed_write_is_neither_an_edit_nor_a_deliverable(client):
    messages = [{"role": "user", "content": "Research the 2024 solar output of Spain and "
                                            "write report.md."}]
    messages += tool_turn("s", "web_search", {"query": "Spain solar 2024 TWh"},
                          "Spain generated 44.5 TWh of solar PV electricity in 2024. " * 20)
    messages += tool_turn("w", "write_file", {"path": "report.md", "content": "# Solar\n" * 30},
                          "Error: [Errno 13] Permission denied: 'report.md'")
    r = await client.post("/synthesize", json={"messages": messages})
    body = r.json()
    assert body["signals"]["outputs_done"] == []
    assert body["phase"] == "gather"
    assert "Finish the change, then run the tests" not in (body["nudge"] or "")
    assert "Permission denied" in body["signals"]["recent_errors"][0]
