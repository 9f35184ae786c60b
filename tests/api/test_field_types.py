"""Every field of every wire format, given a value of the wrong type, on every job that
takes a conversation (and the MCP tool that wraps one): the answer is a result or a
problem document that names the field, never a 5xx."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry
from starlette.testclient import TestClient

from app.main import create_app
from app.settings import Settings

Path = tuple[str | int, ...]

# One conversation per format that uses every field its parser reads.
BASES: dict[str, dict[str, Any]] = {
    "openai": {"messages": [
        {"role": "system", "content": "You fix bugs."},
        {"role": "developer", "content": [{"type": "text", "text": "Be brief."}]},
        {"role": "user", "name": "mia", "content": [
            {"type": "text", "text": "Fix tests/test_dates.py."},
            {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "bash", "arguments": "{\"command\": \"pytest -x\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "FAILED: bad month 13"},
        {"role": "assistant", "content": "Fixed."},
    ]},
    "anthropic": {"system": [{"type": "text", "text": "You fix bugs."}], "messages": [
        {"role": "user", "content": "Fix tests/test_dates.py."},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Run the tests.", "signature": "s"},
            {"type": "text", "text": "Running."},
            {"type": "tool_use", "id": "toolu_1", "name": "bash",
             "input": {"command": "pytest -x"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": True,
             "content": [{"type": "text", "text": "FAILED: bad month 13"}]},
            {"type": "text", "text": "Go on."}]},
        {"role": "assistant", "content": "Fixed."},
    ]},
    "gemini": {"systemInstruction": {"parts": [{"text": "You fix bugs."}]}, "contents": [
        {"role": "user", "parts": [{"text": "Fix tests/test_dates.py."}]},
        {"role": "model", "parts": [
            {"text": "Run the tests.", "thought": True},
            {"functionCall": {"id": "fc_1", "name": "bash", "args": {"command": "pytest -x"}}}]},
        {"role": "user", "parts": [
            {"functionResponse": {"id": "fc_1", "name": "bash",
                                  "response": {"output": "FAILED: bad month 13"}}}]},
        {"role": "model", "parts": [{"text": "Fixed."}]},
    ]},
    "responses": {"instructions": "You fix bugs.", "input": [
        {"type": "message", "role": "developer", "content": "Be brief."},
        {"type": "message", "role": "user",
         "content": [{"type": "input_text", "text": "Fix tests/test_dates.py."}]},
        {"type": "reasoning", "id": "rs_1",
         "summary": [{"type": "summary_text", "text": "Run the tests."}]},
        {"type": "function_call", "call_id": "call_1", "name": "bash",
         "arguments": "{\"command\": \"pytest -x\"}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "FAILED: bad month 13"},
        {"type": "message", "role": "assistant",
         "content": [{"type": "output_text", "text": "Fixed."}]},
    ]},
}

# The jobs: the body each sends around the conversation.
JOBS: dict[str, dict[str, Any]] = {
    "/synthesize": {},
    "/compress-history": {"trigger_messages": 2, "keep_last_n": 1},
    "/rescue": {"question": "Is the test fixed?", "dry_run": True},
}

# A value of each JSON type, and the shapes a field of another type is most often
# mistaken for.
WRONG: tuple[Any, ...] = (None, True, 0, 1.5, "x", "", [], [None], [[]], {}, {"a": []},
                          [{"type": []}])


def _paths(value: Any, at: Path = ()) -> Iterator[Path]:
    if at:
        yield at
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*at, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*at, i))


def _replaced(payload: dict[str, Any], path: Path, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(payload)
    node: Any = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return out


FIELDS = [(name, path) for name, base in BASES.items() for path in _paths(base)]


@pytest.fixture(scope="module")
def http() -> Iterator[TestClient]:
    app = create_app(Settings(), registry=CollectorRegistry(), discover=lambda: [],
                     environ={})
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client


def _pointer(path: Path) -> str:
    return "/" + "/".join(str(p) for p in path)


def _check(http: TestClient, job: str, payload: dict[str, Any], where: str) -> None:
    r = http.post(job, json={**payload, **JOBS[job]})
    assert r.status_code < 500, (job, where, payload, r.text[:500])
    if r.status_code >= 400:
        assert r.headers["content-type"] == "application/problem+json", (job, where)
        assert r.json()["detail"], (job, where)


def _check_mcp(http: TestClient, payload: dict[str, Any], where: str) -> None:
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "synthesize", "arguments": payload}}
    r = http.post("/mcp", json=call, headers={"accept": "application/json, text/event-stream"})
    assert r.status_code < 500, (where, r.text[:500])
    result = r.json().get("result", {})
    text = "".join(c.get("text", "") for c in result.get("content", []))
    assert not text.startswith("5"), (where, payload, text[:500])


@pytest.mark.parametrize("job", [*JOBS, "mcp"])
@pytest.mark.parametrize("fmt", BASES)
def test_every_field_of_every_format_given_the_wrong_type_is_never_a_5xx(
        http: TestClient, job: str, fmt: str) -> None:
    base = BASES[fmt]
    # The untouched conversation is a good one: the fuzz below starts from a 200.
    if job == "mcp":
        _check_mcp(http, base, "base")
    else:
        assert http.post(job, json={**base, **JOBS[job]}).status_code == 200
    for path in _paths(base):
        for value in WRONG:
            payload = _replaced(base, path, value)
            where = f"{_pointer(path)} = {value!r}"
            if job == "mcp":
                _check_mcp(http, payload, where)
            else:
                _check(http, job, payload, where)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False,
                                                               allow_infinity=False)
    | st.sampled_from(["", "x", "user", "text", "model", "assistant", "function_call"]),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.sampled_from(["type", "role", "text", "content", "parts", "id"]),
                      inner, max_size=3),
    max_leaves=6)


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(FIELDS), value=JSON_VALUES,
       job=st.sampled_from([*JOBS, "mcp"]))
def test_any_json_value_at_any_field_is_never_a_5xx(
        http: TestClient, field: tuple[str, Path], value: Any, job: str) -> None:
    fmt, path = field
    payload = _replaced(BASES[fmt], path, value)
    where = f"{fmt} {_pointer(path)} = {value!r}"
    if job == "mcp":
        _check_mcp(http, payload, where)
    else:
        _check(http, job, payload, where)


@pytest.mark.parametrize(("body", "pointer", "expected"), [
    ({"messages": [{"role": [], "content": "hi"}]}, "/messages/0", "role"),
    ({"messages": [{"role": "user", "content": [{"type": {}, "text": "hi"}]}]},
     "/messages/0", "type"),
    ({"input": [{"type": "message", "role": 5, "content": "hi"}]}, "/input/0", "role"),
    ({"input": [{"type": [], "role": "user", "content": "hi"}]}, "/input/0", "type"),
    ({"input": [{"type": "reasoning", "summary": [{"type": {}, "text": "x"}]}]},
     "/input/0", "type"),
    ({"contents": [{"role": [], "parts": [{"text": "hi"}]}]}, "/contents/0", "role"),
    ({"messages": [{"role": {}, "content": "hi"}], "system": "s"}, "/messages/0", "role"),
])
def test_a_field_of_the_wrong_type_is_a_422_that_names_it(
        http: TestClient, body: dict[str, Any], pointer: str, expected: str) -> None:
    r = http.post("/synthesize", json=body)
    assert r.status_code == 422, r.text
    problem = r.json()
    assert r.headers["content-type"] == "application/problem+json"
    assert expected in problem["detail"]
    assert problem["pointer"].startswith(pointer), problem
