"""Every list a job takes is bounded by a setting: a list over its bound is refused with
a 413 that names the setting, before the body is checked against its schema, and the
schema check of a large body runs off the event loop."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from app.api.schemas.trace import SummarizeTraceRequest
from tests.api.test_errors import assert_problem
from tests.conftest import serve
from tests.support.build import coding_run

pytestmark = pytest.mark.anyio


def _action(n: int) -> dict[str, Any]:
    return {"action": "read_file", "action_input": f"src/m{n}.py",
            "observation": f"def f{n}(): return {n}"}


def _call(n: int) -> dict[str, Any]:
    return {"tool": "bash", "params": {"command": f"cat f{n}.log"}, "output": f"line {n}"}


def _scratchpad(n: int) -> str:
    return "\n".join(f"Thought: look\nAction: read_file\nAction Input: src/m{i}.py\n"
                     f"Observation: def f{i}(): return {i}" for i in range(n))


def _record(calls: int) -> dict[str, Any]:
    return {"progress_assessment": "advancing", "calls": [_call(i) for i in range(calls)]}


def _reflect(**fields: Any) -> dict[str, Any]:
    return {"goal": "fix the failing test", "mode": "fast", "tool_calls": [_call(0)], **fields}


# A list, its setting, and a body with ``n`` items in it; ``pointer``: where the problem
# points when the list is over its bound.
Case = tuple[str, str, Callable[[int], dict[str, Any]], str]
CASES: dict[str, Case] = {
    "trace-actions": ("/summarize-trace", "max_trace_actions",
                      lambda n: {"actions": [_action(i) for i in range(n)], "mode": "fast"},
                      "/actions"),
    "trace-scratchpad": ("/summarize-trace", "max_trace_actions",
                         lambda n: {"scratchpad": _scratchpad(n), "mode": "fast"},
                         "/scratchpad"),
    "reflect-calls": ("/reflect", "max_reflect_calls",
                      lambda n: _reflect(tool_calls=[_call(i) for i in range(n)]),
                      "/tool_calls"),
    "reflect-history": ("/reflect", "max_reflect_history",
                        lambda n: _reflect(history=[_record(1) for _ in range(n)]),
                        "/history"),
    "reflect-record-calls": ("/reflect", "max_reflect_calls",
                             lambda n: _reflect(history=[_record(1), _record(n)]),
                             "/history/1/calls"),
    "reflect-history-calls": ("/reflect", "max_reflect_history_calls",
                              lambda n: _reflect(history=[_record(n - n // 2),
                                                          _record(n // 2)]),
                              "/history"),
    "recall-memories": ("/summarize-recall", "max_recall_memories",
                        lambda n: {"query": "Which file defines f1?", "mode": "extractive",
                                   "memories": [{"id": f"m{i}", "text": f"f{i} is in m{i}.py"}
                                                for i in range(n)]},
                        "/memories"),
    "synthesize-messages": ("/synthesize", "max_messages",
                            lambda n: {"messages": coding_run(20)[:n]}, "/messages"),
}
LIMIT = 4


@pytest.mark.parametrize("case", sorted(CASES))
async def test_a_list_at_its_bound_is_served_and_one_more_is_refused_naming_the_setting(
        make_app, case):
    path, setting, body, pointer = CASES[case]
    async with serve(make_app(**{setting: LIMIT})) as c:
        at = await c.post(path, json=body(LIMIT))
        over = await c.post(path, json=body(LIMIT + 1))
    assert at.status_code == 200, at.text
    problem = assert_problem(over, 413, "limit-exceeded")
    env = f"CONTEXTSYNTH_{setting.upper()}"
    assert (problem["limit"], problem["limit_value"]) == (env, LIMIT)
    assert f"at most {LIMIT} ({env})" in problem["detail"]
    assert problem["pointer"] == pointer
    assert f"{LIMIT + 1} " in problem["detail"]


@pytest.mark.parametrize(("path", "setting", "body"), [
    ("/reflect", "max_reflect_calls", _reflect(tool_calls=[_call(i) for i in range(1001)])),
    ("/summarize-recall", "max_recall_memories", {
        "query": "Which file defines f1?", "mode": "extractive",
        "memories": [{"id": f"m{i}", "text": f"f{i} is in m{i}.py"} for i in range(1001)]}),
])
async def test_an_operator_can_raise_a_bound_past_its_default(make_app, path, setting, body):
    async with serve(make_app()) as c:
        refused = await c.post(path, json=body)
    async with serve(make_app(**{setting: 1001})) as c:
        served = await c.post(path, json=body)
    assert assert_problem(refused, 413, "limit-exceeded")["limit_value"] == 1000
    assert served.status_code == 200, served.text


@pytest.mark.parametrize(("path", "body", "env"), [
    # Items that are not what the schema asks for, and more of them than the bound.
    ("/summarize-trace", {"actions": [{"tool": "bash"}] * 1001}, "MAX_TRACE_ACTIONS"),
    ("/reflect", {"goal": "g", "tool_calls": [{"name": 1}] * 1001}, "MAX_REFLECT_CALLS"),
    ("/reflect", {"goal": "g", "tool_calls": [{"tool": "bash"}],
                  "history": [{"calls": "not a list"}] * 101}, "MAX_REFLECT_HISTORY"),
    ("/summarize-recall", {"query": "q", "memories": [{"id": ""}] * 1001},
     "MAX_RECALL_MEMORIES"),
    ("/synthesize", {"messages": [{"role": "user", "content": "hi"}] * 5001,
                     "mode": "no such mode"}, "MAX_MESSAGES"),
])
async def test_the_bound_is_checked_before_the_schema(client, path, body, env):
    r = await client.post(path, json=body)
    problem = assert_problem(r, 413, "limit-exceeded")
    assert problem["limit"] == f"CONTEXTSYNTH_{env}"
    assert "errors" not in problem  # no schema errors: the items were never read


async def test_a_scratchpad_is_bounded_in_characters_as_any_text_is(make_app):
    async with serve(make_app(max_message_chars=1000)) as c:
        r = await c.post("/summarize-trace", json={"scratchpad": _scratchpad(30)})
    problem = assert_problem(r, 413, "limit-exceeded")
    assert problem["pointer"] == "/scratchpad"
    assert (problem["limit"], problem["limit_value"]) == ("CONTEXTSYNTH_MAX_MESSAGE_CHARS",
                                                          1000)


@pytest.mark.parametrize(("offload_chars", "off_loop"), [(0, True), (10_000_000, False)])
async def test_a_large_body_is_checked_against_its_schema_off_the_event_loop(
        make_app, monkeypatch, offload_chars, off_loop):
    threads: list[str] = []
    validate = SummarizeTraceRequest.model_validate

    def recorded(value: Any, **kwargs: Any) -> SummarizeTraceRequest:
        threads.append(threading.current_thread().name)
        return validate(value, **kwargs)

    monkeypatch.setattr(SummarizeTraceRequest, "model_validate", recorded)
    async with serve(make_app(offload_chars=offload_chars)) as c:
        ok = await c.post("/summarize-trace",
                          json={"actions": [_action(i) for i in range(12)], "mode": "fast"})
        bad = await c.post("/summarize-trace", json={"actions": [{"tool": "bash"}]})
    assert ok.status_code == 200, ok.text
    # Refused off the loop as on it: the same 422, with the same errors.
    problem = assert_problem(bad, 422, "validation-error")
    assert problem["errors"][0]["pointer"] == "/actions/0/action"
    loop = threading.current_thread().name
    assert len(threads) == 2
    assert all((name != loop) is off_loop for name in threads)
