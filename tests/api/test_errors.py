"""Every bad input gets a specific RFC 9457 problem."""

import json

import httpx
import pytest

from tests.support.build import coding_run

pytestmark = pytest.mark.anyio


def assert_problem(r: httpx.Response, status: int, slug: str) -> dict:
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/problem+json"
    body = r.json()
    assert body["status"] == status and body["type"] == f"urn:contextsynth:problem:{slug}"
    assert body["title"] and body["detail"]
    return body


async def test_malformed_json(client):
    r = await client.post("/synthesize", content=b'{"messages": [', headers={
        "content-type": "application/json"})
    body = assert_problem(r, 400, "malformed-json")
    assert "not be parsed as JSON" in body["detail"]


async def test_wrong_types_point_at_the_field(client):
    r = await client.post("/synthesize", json={"messages": [{"role": "user", "content": "x"}],
                                               "iteration": "three", "tier": "huge"})
    body = assert_problem(r, 422, "validation-error")
    pointers = {e["pointer"] for e in body["errors"]}
    assert pointers == {"/iteration", "/tier"}


async def test_unknown_field_is_named(client):
    r = await client.post("/synthesize", json={"messages": [{"role": "user", "content": "x"}],
                                               "max_iteration": 3})
    body = assert_problem(r, 422, "validation-error")
    assert body["errors"] == [{"pointer": "/max_iteration",
                               "detail": "this field is not part of the API; check its spelling"}]


async def test_empty_messages(client):
    body = assert_problem(await client.post("/synthesize", json={"messages": []}), 422,
                          "validation-error")
    assert body["errors"][0]["pointer"] == "/messages"


async def test_orphaned_tool_result_names_the_message(client):
    messages = coding_run(2)
    messages.insert(3, {"role": "tool", "tool_call_id": "call_99", "content": "stray"})
    body = assert_problem(await client.post("/synthesize", json={"messages": messages}), 422,
                          "invalid-transcript")
    assert "messages[3]" in body["detail"] and "call_99" in body["detail"]
    assert body["pointer"] == "/messages/3"


async def test_orphaned_tool_call_names_the_message(client):
    messages = coding_run(2)[:-1]
    body = assert_problem(await client.post("/synthesize", json={"messages": messages}), 422,
                          "invalid-transcript")
    assert "messages[4]" in body["detail"] and "call_1" in body["detail"]


async def test_unknown_format(client):
    r = await client.post("/synthesize", json={"messages": coding_run(1), "format": "xml"})
    body = assert_problem(r, 422, "unknown-format")
    assert "auto, openai, anthropic" in body["detail"]


async def test_mixed_formats(client):
    messages = [{"role": "system", "content": "s"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f",
                                                   "input": {}}]}]
    body = assert_problem(await client.post("/synthesize", json={"messages": messages}), 422,
                          "ambiguous-format")
    assert "openai" in body["detail"] and "anthropic" in body["detail"]


async def test_unknown_strategy(client):
    r = await client.post("/synthesize", json={"messages": coding_run(3), "reasoning": {
        "synthesis": "custom", "synthesis_strategy": "magic"}})
    body = assert_problem(r, 422, "unknown-strategy")
    assert "observation-mask" in body["detail"]


async def test_body_over_the_limit_declared(make_app):
    transport = httpx.ASGITransport(app=make_app(max_body_bytes=2048))
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
        r = await c.post("/synthesize", json={"messages": coding_run(10)})
    body = assert_problem(r, 413, "body-too-large")
    assert body["limit"] == 2048 and "CONTEXTSYNTH_MAX_BODY_BYTES" in body["detail"]


async def test_body_over_the_limit_chunked(make_app):
    payload = json.dumps({"messages": coding_run(10)}).encode()

    async def chunks():
        for i in range(0, len(payload), 1000):
            yield payload[i:i + 1000]

    transport = httpx.ASGITransport(app=make_app(max_body_bytes=2048))
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
        r = await c.post("/synthesize", content=chunks(),
                         headers={"content-type": "application/json"})
    assert_problem(r, 413, "body-too-large")


async def test_chunked_body_under_the_limit_is_read_whole(client):
    payload = json.dumps({"messages": coding_run(3)}).encode()

    async def chunks():
        for i in range(0, len(payload), 500):
            yield payload[i:i + 500]

    r = await client.post("/synthesize", content=chunks(),
                          headers={"content-type": "application/json"})
    assert r.status_code == 200, r.text


async def test_too_many_messages(make_app):
    transport = httpx.ASGITransport(app=make_app(max_messages=5))
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
        r = await c.post("/synthesize", json={"messages": coding_run(4)})
    body = assert_problem(r, 413, "limit-exceeded")
    assert "at most 5 (CONTEXTSYNTH_MAX_MESSAGES)" in body["detail"]
    assert (body["limit"], body["limit_value"]) == ("CONTEXTSYNTH_MAX_MESSAGES", 5)


async def test_oversized_message(make_app):
    transport = httpx.ASGITransport(app=make_app(max_message_chars=100))
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
        r = await c.post("/synthesize", json={"messages": coding_run(1)})
    body = assert_problem(r, 413, "limit-exceeded")
    assert body["pointer"] == "/messages/3"  # the 1,500-character tool result
    assert ("messages[3] has 1519 characters of content; the limit is 100 "
            "(CONTEXTSYNTH_MAX_MESSAGE_CHARS)." in body["detail"])
    assert (body["limit"], body["limit_value"]) == ("CONTEXTSYNTH_MAX_MESSAGE_CHARS", 100)


async def test_unknown_route_and_method(client):
    assert_problem(await client.get("/nowhere"), 404, "not-found")
    assert_problem(await client.get("/synthesize"), 405, "method-not-allowed")


async def test_oversized_anthropic_tool_result_is_caught(make_app):
    big = "x" * 500
    payload = {"system": "s", "messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f",
                                           "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
                                      "content": [{"type": "text", "text": big}]}]}]}
    transport = httpx.ASGITransport(app=make_app(max_message_chars=100))
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
        r = await c.post("/synthesize", json=payload)
    body = assert_problem(r, 413, "limit-exceeded")
    assert body["pointer"] == "/messages/2"


TEXTS = {
    "/summarize-recall": ({"query": "seat?", "memories": [{"id": "m1", "text": "short"},
                                                          {"id": "m2", "text": "x" * 300}]},
                          "/memories/1/text"),
    "/summarize-trace": ({"actions": [{"action": "bash", "observation": "x" * 300}]},
                         "/actions/0/observation"),
    "/reflect": ({"goal": "fix", "tool_calls": [{"tool": "ls", "output": "x" * 300}]},
                 "/tool_calls/0/output"),
    "/rescue": ({"messages": coding_run(1), "question": "why? " * 60}, "/question"),
    "/synthesize": ({"messages": coding_run(1), "system": "s" * 300}, "/system"),
}


@pytest.mark.parametrize("path", sorted(TEXTS))
async def test_every_job_refuses_a_text_over_the_limit_and_names_it(make_app, path):
    body, pointer = TEXTS[path]
    transport = httpx.ASGITransport(app=make_app(max_message_chars=200))
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
        r = await c.post(path, json=body)
    problem = assert_problem(r, 413, "limit-exceeded")
    assert problem["pointer"] == pointer
    assert "the limit for one text is 200" in problem["detail"], problem["detail"]


@pytest.mark.parametrize("path", ["/compress-history", "/rescue", "/summarize-recall",
                                  "/reflect", "/summarize-trace"])
async def test_misspelt_options_are_named_on_every_job(client, path):
    r = await client.post(path, json={"messages": coding_run(1), "keep_lastn": 3})
    body = assert_problem(r, 422, "validation-error")
    assert {"pointer": "/keep_lastn",
            "detail": "this field is not part of the API; check its spelling"} in body["errors"]


async def test_a_list_over_its_most_items_is_a_413(client):
    call = {"tool": "ls", "output": "a.py"}
    r = await client.post("/reflect", json={"goal": "g", "tool_calls": [call] * 1001})
    problem = assert_problem(r, 413, "limit-exceeded")
    assert problem["pointer"] == "/tool_calls" and "1000" in problem["detail"]
