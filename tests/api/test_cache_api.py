"""Caching, single flight, fail-open, tenants and expand handles through the API."""

import asyncio
import json
import uuid

import pytest
import respx

from app.api.auth import hash_key
from tests.api.test_deep import PROVIDER, URL, completion
from tests.conftest import serve
from tests.support.build import coding_run
from tests.support.convert import to_anthropic
from tests.support.fake_llm import FakeLLM
from tests.support.redis_server import RedisServer
from tests.support.wire import CASES

pytestmark = pytest.mark.anyio
SHARED_REDIS = "redis://127.0.0.1:6379/0"


def deep(messages=None, **extra):
    return {"messages": messages or coding_run(12), "reasoning": {"synthesis": "deep"},
            **extra}


def unique_run():
    """A transcript no other test sends, so cache keys never collide across runs."""
    messages = coding_run(12)
    messages[1] = {**messages[1], "content": f"{messages[1]['content']} ({uuid.uuid4()})"}
    return messages


@pytest.mark.parametrize("redis_url", [None, SHARED_REDIS], ids=["memory", "redis"])
@respx.mock
async def test_second_identical_call_is_a_hit_until_force_refresh(make_app, redis_url):
    route = respx.post(URL).respond(200, json=completion())
    messages = unique_run()
    async with serve(make_app(llm_providers=[PROVIDER], redis_url=redis_url)) as c:
        first = (await c.post("/synthesize", json=deep(messages))).json()
        second = (await c.post("/synthesize", json=deep(messages))).json()
        third = (await c.post("/synthesize", json=deep(messages, force_refresh=True))).json()
    assert first["cache"] == {"hit": False, "key_age_seconds": None}
    assert second["cache"]["hit"] and second["cache"]["key_age_seconds"] >= 0
    assert second["messages"] == first["messages"]
    assert not third["cache"]["hit"]
    assert route.call_count == 2


async def test_concurrent_identical_calls_share_one_llm_call(make_app):
    with FakeLLM(delay_s=0.4) as llm:
        provider = {**PROVIDER, "base_url": llm.base_url}
        async with serve(make_app(llm_providers=[provider])) as c:
            messages = unique_run()
            results = await asyncio.gather(*(c.post("/synthesize", json=deep(messages))
                                              for _ in range(3)))
    assert all(r.json()["mode"] == "deep" for r in results)
    assert len(llm.requests) == 1


async def test_single_flight_across_replicas(make_app):
    with FakeLLM(delay_s=0.5) as llm:
        provider = {**PROVIDER, "base_url": llm.base_url}
        settings = {"llm_providers": [provider], "redis_url": SHARED_REDIS}
        async with serve(make_app(**settings)) as a, serve(make_app(**settings)) as b:
            messages = unique_run()
            ra, rb = await asyncio.gather(a.post("/synthesize", json=deep(messages)),
                                          b.post("/synthesize", json=deep(messages)))
    assert ra.json()["mode"] == rb.json()["mode"] == "deep"
    assert len(llm.requests) == 1, "two replicas, one LLM call"
    assert sorted([ra.json()["cache"]["hit"], rb.json()["cache"]["hit"]]) == [False, True]


@respx.mock
async def test_redis_dying_mid_run_fails_no_request(make_app):
    route = respx.post(URL).respond(200, json=completion())
    with RedisServer() as server:
        app = make_app(llm_providers=[PROVIDER], redis_url=server.url, redis_timeout_s=0.2,
                       redis_pause_s=0.3)
        async with serve(app) as c:
            messages = unique_run()
            assert (await c.post("/synthesize", json=deep(messages))).status_code == 200
            assert (await c.post("/synthesize", json=deep(messages))).json()["cache"]["hit"]
            assert (await c.get("/readyz")).json()["status"] == "ready"
            server.kill()
            for _ in range(3):
                r = await c.post("/synthesize", json=deep(messages))
                assert r.status_code == 200 and r.json()["mode"] == "deep"
                assert not r.json()["cache"]["hit"]
            ready = (await c.get("/readyz")).json()
            assert ready["status"] == "degraded" and "unreachable" in ready["checks"]["redis"]
            metrics = (await c.get("/metrics")).text
            assert 'contextsynth_cache_requests_total{result="error"}' in metrics
            server.start()
            await asyncio.sleep(0.4)  # past the pause: Redis is tried again
            await c.post("/synthesize", json=deep(messages))  # stores the result again
            again = (await c.post("/synthesize", json=deep(messages))).json()
            assert again["cache"]["hit"], "caching resumes once Redis is back"
            assert (await c.get("/readyz")).json()["status"] == "ready"
    assert route.call_count == 5


KEYS = {hash_key("alpha-key"): "alpha", hash_key("beta-key"): "beta"}


def bearer(key):
    return {"authorization": f"Bearer {key}"}


@pytest.fixture
async def keyed(make_app):
    async with serve(make_app(api_keys=KEYS, llm_providers=[PROVIDER])) as c:
        yield c


@pytest.mark.parametrize("headers", [{}, {"authorization": "Bearer nope"},
                                     {"authorization": "Basic alpha-key"}])
async def test_keys_are_required_when_configured(keyed, headers):
    r = await keyed.post("/synthesize", json={"messages": coding_run(3)}, headers=headers)
    assert r.status_code == 401
    assert r.headers["www-authenticate"] == "Bearer"
    assert r.json()["type"].endswith("unauthorized")


async def test_health_needs_no_key(keyed):
    assert (await keyed.get("/healthz")).status_code == 200


async def test_handles_are_per_tenant(keyed):
    body = (await keyed.post("/synthesize", json={"messages": coding_run(8)},
                             headers=bearer("alpha-key"))).json()
    handle = body["receipt"]["dropped"][0]["handle"]
    assert (await keyed.get(f"/expand/{handle}", headers=bearer("alpha-key"))).status_code == 200
    other = await keyed.get(f"/expand/{handle}", headers=bearer("beta-key"))
    assert other.status_code == 404 and other.json()["type"].endswith("handle-not-found")


@respx.mock
async def test_tenants_do_not_share_cached_results(keyed):
    route = respx.post(URL).respond(200, json=completion())
    messages = unique_run()
    a = (await keyed.post("/synthesize", json=deep(messages), headers=bearer("alpha-key")))
    b = (await keyed.post("/synthesize", json=deep(messages), headers=bearer("beta-key")))
    assert not a.json()["cache"]["hit"] and not b.json()["cache"]["hit"]
    assert route.call_count == 2


async def test_expand_round_trip_openai(client):
    messages = coding_run(24)  # a block of turns closes into a note
    body = (await client.post("/synthesize", json={"messages": messages})).json()
    span = body["receipt"]["dropped"][0]
    assert span["handle"] in body["messages"][2]["content"]
    expanded = (await client.get(f"/expand/{span['handle']}")).json()
    assert expanded["format"] == "openai" and expanded["kind"] == "compacted"
    assert expanded["messages"] == messages[span["first"]:span["last"] + 1]


async def test_expand_round_trip_anthropic(client):
    payload = to_anthropic(coding_run(8))
    body = (await client.post("/synthesize", json=payload)).json()
    span = body["receipt"]["dropped"][0]
    expanded = (await client.get(f"/expand/{span['handle']}")).json()
    assert expanded["format"] == "anthropic"
    # the originals come back as Anthropic messages: tool_use and tool_result blocks
    assert expanded["messages"] == payload["messages"][span["first"]:span["last"] + 1]


async def test_expand_answers_in_the_callers_format(client):
    messages = coding_run(8)
    anthropic = (await client.post("/synthesize", json=to_anthropic(messages))).json()
    span = anthropic["receipt"]["dropped"][0]
    openai = (await client.post("/synthesize", json={"messages": messages})).json()
    again = openai["receipt"]["dropped"][0]
    assert again["handle"] == span["handle"]  # the same content
    # The span was dropped again by an OpenAI caller: it is theirs, in their format.
    expanded = (await client.get(f"/expand/{span['handle']}")).json()
    assert expanded["format"] == "openai"
    assert expanded["messages"] == messages[again["first"]:again["last"] + 1]
    # And back: the Anthropic caller's next drop makes it theirs again.
    await client.post("/synthesize", json=to_anthropic(messages))
    back = (await client.get(f"/expand/{span['handle']}")).json()
    assert back["format"] == "anthropic"
    assert back["messages"] == to_anthropic(messages)["messages"][
        span["first"]:span["last"] + 1]


async def test_expand_of_a_cut_result_and_of_a_trace(client):
    messages = coding_run(6, output_chars=3000)
    body = (await client.post("/synthesize", json={"messages": messages})).json()
    cut = next(s for s in body["receipt"]["dropped"] if s["kind"] == "truncated")
    expanded = (await client.get(f"/expand/{cut['handle']}")).json()
    assert expanded["messages"] == [messages[cut["first"]]]
    trace = (await client.post("/summarize-trace", json={
        "actions": [{"action": "read", "action_input": f"f{i}.py", "observation": "x " * 300}
                    for i in range(12)]})).json()
    handle = trace["receipt"]["dropped"][0]["handle"]
    actions = (await client.get(f"/expand/{handle}")).json()["actions"]
    assert [a["action_input"] for a in actions] == [f"f{i}.py" for i in range(7)]


async def test_expired_handles_are_404(make_app):
    async with serve(make_app(expand_ttl_s=0.2)) as c:
        body = (await c.post("/synthesize", json={"messages": coding_run(8)})).json()
        handle = body["receipt"]["dropped"][0]["handle"]
        assert (await c.get(f"/expand/{handle}")).status_code == 200
        await asyncio.sleep(0.3)
        r = await c.get(f"/expand/{handle}")
    assert r.status_code == 404 and "expire" in r.json()["detail"]


async def test_unknown_handle(client):
    r = await client.get("/expand/cs_00000000000000000000")
    assert r.status_code == 404
    assert json.loads(r.text)["pointer"] == "/handle"


@pytest.mark.parametrize("case", ["gemini", "responses"])
async def test_expand_round_trip_in_the_new_formats(client, case):
    name, convert, _ = CASES[case]
    payload = convert(coding_run(24))
    body = (await client.post("/synthesize", json=payload)).json()
    span = body["receipt"]["dropped"][0]
    expanded = (await client.get(f"/expand/{span['handle']}")).json()
    assert expanded["format"] == name
    key = "contents" if name == "gemini" else "input"
    originals = expanded[key]
    text = json.dumps(originals)
    # the dropped calls and their results come back in the format's own shapes
    assert ("functionCall" in text and "functionResponse" in text) if name == "gemini" else (
        '"function_call"' in text and '"function_call_output"' in text)
    assert "cat src/module_0.py" in text


async def test_handles_made_while_redis_is_down_still_expand_and_are_saved_when_it_is_back(
        make_app):
    import redis as redis_sync

    from app.adapters.cache import handle_key

    with RedisServer() as server:
        app = make_app(redis_url=server.url, redis_pause_s=0.05, redis_timeout_s=0.2)
        async with serve(app) as c:
            server.kill()
            messages = unique_run() + coding_run(30)[2:]
            body = (await c.post("/synthesize", json={"messages": messages})).json()
            handle = body["receipt"]["dropped"][0]["handle"]
            # this replica kept what it could not save: the handle it gave out works
            r = await c.get(f"/expand/{handle}")
            assert r.status_code == 200 and r.json()["handle"] == handle
            # one it never saw cannot be looked up now, which is not the same as gone
            missing = await c.get("/expand/cs_00000000000000000000")
            assert missing.status_code == 503
            assert missing.json()["type"].endswith("handles-unavailable")
            assert int(missing.headers["retry-after"]) >= 1
            server.start()  # back, and empty
            stored = None
            for _ in range(10):  # the agent's next calls; the first may meet a dead socket
                await asyncio.sleep(0.1)  # past the pause after the last error
                await c.post("/synthesize", json={"messages": messages})
                stored = redis_sync.Redis(port=server.port).get(handle_key("default", handle))
                if stored is not None:
                    break
            assert stored is not None and json.loads(stored)["handle"] == handle
            assert (await c.get("/expand/cs_00000000000000000000")).status_code == 404


async def test_handles_are_saved_again_after_redis_restarts_empty(make_app):
    with RedisServer() as server:
        app = make_app(redis_url=server.url, redis_timeout_s=0.2, redis_pause_s=0.05)
        async with serve(app) as c:
            messages = coding_run(24)
            body = (await c.post("/synthesize", json={"messages": messages})).json()
            handle = body["receipt"]["dropped"][0]["handle"]
            assert (await c.get(f"/expand/{handle}")).status_code == 200
            cache = app.state.services.handles._cache
            before = cache.generation
            server.kill()
            server.start()  # the same address, empty; no request saw it go
            for _ in range(100):  # the watcher looks every 0.05 s
                if cache.generation != before:
                    break
                await asyncio.sleep(0.05)
            assert (await c.get(f"/expand/{handle}")).status_code == 404  # Redis lost it
            # The agent's next call resends the same prefix: its handles are saved again.
            await c.post("/synthesize", json={"messages": messages})
            expanded = await c.get(f"/expand/{handle}")
            assert expanded.status_code == 200
            assert expanded.json()["messages"] == messages[
                body["receipt"]["dropped"][0]["first"]:body["receipt"]["dropped"][0]["last"] + 1]
