"""What operators and client authors ran into: request ids, bodies that are not plain
JSON, huge error lists, 405s and an open circuit breaker."""

import asyncio
import gzip
import json

import httpx
import pytest
import respx

from tests.api.test_deep import PROVIDER, URL
from tests.conftest import serve
from tests.support.build import coding_run

pytestmark = pytest.mark.anyio
JSON = {"content-type": "application/json"}


async def test_a_request_id_is_kept_or_made_and_returned(client):
    r = await client.post("/synthesize", json={"messages": coding_run(2)},
                          headers={"x-request-id": "agent-7f3a:step-12"})
    assert r.status_code == 200 and r.headers["x-request-id"] == "agent-7f3a:step-12"
    made = await client.post("/synthesize", json={"messages": coding_run(2)})
    assert len(made.headers["x-request-id"]) == 32
    again = await client.post("/synthesize", json={"messages": coding_run(2)})
    assert again.headers["x-request-id"] != made.headers["x-request-id"]
    # an id that would not be safe in a log line or a header is replaced
    odd = await client.get("/healthz", headers={"x-request-id": "a b\tc" + "x" * 200})
    assert odd.headers["x-request-id"] != "a b\tc" + "x" * 200


async def test_problem_documents_carry_the_request_id(client):
    r = await client.post("/synthesize", json={"messages": []},
                          headers={"x-request-id": "req-42"})
    assert r.status_code == 422 and r.json()["request_id"] == "req-42"
    big = await client.post("/synthesize", content=b"x" * 10, headers={
        "x-request-id": "req-43", "content-type": "text/plain"})
    assert big.json()["request_id"] == "req-43" and big.headers["x-request-id"] == "req-43"


async def test_a_body_declared_as_something_else_is_a_415(client):
    body = json.dumps({"messages": coding_run(2)})
    for media in ("application/x-www-form-urlencoded", "text/plain"):
        r = await client.post("/synthesize", content=body, headers={"content-type": media})
        assert r.status_code == 415, media
        problem = r.json()
        assert problem["type"].endswith("unsupported-media-type")
        assert media in problem["detail"] and "application/json" in problem["detail"]
    ok = await client.post("/synthesize", content=body,
                           headers={"content-type": "application/json; charset=utf-8"})
    assert ok.status_code == 200


async def test_an_empty_body_says_it_is_empty(client):
    r = await client.post("/synthesize", content=b"", headers=JSON)
    assert r.status_code == 400
    assert r.json()["type"].endswith("empty-body") and "empty" in r.json()["detail"]


async def test_gzip_bodies_are_read_and_limited_once_decoded(make_app):
    messages = coding_run(30)
    raw = json.dumps({"messages": messages}).encode()
    packed = gzip.compress(raw)
    async with serve(make_app(max_body_bytes=len(raw) + 10)) as c:
        r = await c.post("/synthesize", content=packed,
                         headers={**JSON, "content-encoding": "gzip"})
        assert r.status_code == 200, r.text
        plain = await c.post("/synthesize", content=raw, headers=JSON)
        assert r.json()["messages"] == plain.json()["messages"]
        broken = await c.post("/synthesize", content=packed[: len(packed) // 2],
                              headers={**JSON, "content-encoding": "gzip"})
        assert broken.status_code == 400 and broken.json()["type"].endswith("malformed-gzip")
        other = await c.post("/synthesize", content=raw, headers={**JSON,
                                                                  "content-encoding": "br"})
        assert other.status_code == 415
    # small on the wire, too large once decompressed: the limit is on what it decodes to
    async with serve(make_app(max_body_bytes=len(packed) + 10)) as c:
        r = await c.post("/synthesize", content=packed,
                         headers={**JSON, "content-encoding": "gzip"})
        assert r.status_code == 413 and "decompressed" in r.json()["detail"]


async def test_a_body_with_thousands_of_mistakes_gets_the_first_twenty(client):
    body = {"messages": coding_run(1), **{f"unknown_{i}": i for i in range(5000)}}
    r = await client.post("/synthesize", json=body)
    assert r.status_code == 422
    problem = r.json()
    assert len(problem["errors"]) == 20 and problem["errors_omitted"] == 4980
    assert "and 4999 more" in problem["detail"] and len(r.content) < 10_000


async def test_a_405_says_which_methods_are_allowed(client):
    r = await client.get("/synthesize")
    assert r.status_code == 405 and r.headers["allow"] == "POST"


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/metrics", "/expand/cs_1"])
@pytest.mark.parametrize("body", [b"", b"x", b'{"a": 1}'])
async def test_a_method_a_path_does_not_take_is_a_405_whatever_the_body(client, path, body):
    for method in ("PUT", "PATCH", "POST"):
        r = await client.request(method, path, content=body, headers=JSON)
        assert r.status_code == 405, (method, r.text)
        assert r.headers["allow"] == "GET" and r.json()["type"].endswith("method-not-allowed")


@respx.mock
async def test_an_open_circuit_says_when_to_retry(make_app):
    respx.post(URL).mock(return_value=httpx.Response(500, json={"error": {"message": "x"}}))
    body = {"messages": coding_run(12), "reasoning": {"synthesis": "deep"},
            "on_llm_error": "error"}
    async with serve(make_app(llm_providers=[PROVIDER], llm_retries=1)) as c:
        statuses = [(await c.post("/synthesize", json=body)) for _ in range(6)]
    *failed, last = statuses
    assert {r.status_code for r in failed} == {502}
    assert last.status_code == 503 and last.json()["type"].endswith("llm-circuit-open")
    assert 1 <= int(last.headers["retry-after"]) <= 30


async def test_a_body_that_trickles_in_gets_a_408_and_the_connection_closes():
    from app.api.middleware import BodyLimit

    reached = []

    async def app(scope, receive, send):  # the routes never see a body this slow
        reached.append(scope["path"])

    async def trickle():
        await asyncio.sleep(0.05)
        return {"type": "http.request", "body": b"{", "more_body": True}

    sent = []

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/synthesize",
             "headers": [(b"content-type", b"application/json")]}
    await BodyLimit(app, max_bytes=1 << 20, read_timeout_s=0.3)(scope, trickle, send)
    start, body = sent
    assert start["status"] == 408 and (b"connection", b"close") in start["headers"]
    assert json.loads(body["body"])["type"].endswith("body-timeout") and not reached


@pytest.mark.parametrize("value", [0, 1, "false", "true", "yes"])
async def test_booleans_are_booleans(client, value):
    r = await client.post("/synthesize", json={"messages": coding_run(2), "steer": value})
    assert r.status_code == 422 and r.json()["errors"][0]["pointer"] == "/steer"
    r = await client.post("/summarize-recall", json={
        "query": "q", "memories": [{"id": "m1", "text": "x"}], "include_citations": value})
    assert r.status_code == 422


@pytest.mark.parametrize("chunks", [1, 40])
@pytest.mark.parametrize("gzipped", [False, True])
async def test_while_the_app_runs_the_body_is_held_once(chunks, gzipped):
    """BodyLimit hands the app the body as one message and keeps no copy (chunks, joined
    body or compressed bytes) in its own frames: a 15 MB body was held three times to
    the end of the request."""
    import sys

    from app.api.middleware import BodyLimit

    raw = json.dumps({"messages": [{"role": "user", "content": "x" * 200_000}]}).encode()
    sent = gzip.compress(raw) if gzipped else raw
    size = -(-len(sent) // chunks)
    # Copies: the wire's chunks are the server's own objects, not the test's.
    parts = [bytes(bytearray(sent[i:i + size])) for i in range(0, len(sent), size)]
    seen = {}

    async def app(scope, receive, send):
        message = await receive()
        body = message.pop("body")
        del message
        seen["body"] = body == raw
        # This frame's name and getrefcount's argument; nothing else.
        seen["refs"] = sys.getrefcount(body)
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def receive():
        return {"type": "http.request", "body": parts.pop(0), "more_body": len(parts) > 0}

    async def send(message):
        pass

    headers = [(b"content-type", b"application/json")]
    if gzipped:
        headers.append((b"content-encoding", b"gzip"))
    scope = {"type": "http", "method": "POST", "path": "/synthesize", "headers": headers}
    await BodyLimit(app, max_bytes=1 << 22)(scope, receive, send)
    assert seen == {"body": True, "refs": 2}
