"""A tenant's server-side provider key is spent only where the operator allows: the
conversation routes the proxy compacts, the pass-through routes listed (model lists and
token counts by default), and the models listed for the tenant."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fastapi import FastAPI
from prometheus_client import CollectorRegistry
from pydantic import ValidationError

from app.adapters.upstream_memory import MemoryUpstream, Sent, UpstreamReply
from app.main import create_app
from app.service.server_keys import ServerKeyPolicy, ServerKeyRefused, requested_model
from app.settings import Settings
from tests.conftest import serve

pytestmark = pytest.mark.anyio

OPENAI_KEY, ANTHROPIC_KEY, GEMINI_KEY = "sk-operator-openai", "sk-ant-operator", "g-operator"
SERVER_KEYS = {"default": {"openai": "T_OPENAI", "anthropic": "T_ANTHROPIC",
                           "gemini": "T_GEMINI"}}
ENVIRON = {"T_OPENAI": OPENAI_KEY, "T_ANTHROPIC": ANTHROPIC_KEY, "T_GEMINI": GEMINI_KEY}
ANTHROPIC = {"anthropic-version": "2023-06-01"}
CHAT = {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "hi"}]}


def _answer(_: Sent) -> UpstreamReply:
    return UpstreamReply.json({"object": "list", "data": []})


@pytest.fixture
def make(encoder: Any) -> Callable[..., tuple[FastAPI, MemoryUpstream]]:
    def build(environ: dict[str, str] | None = None,
              handler: Callable[[Sent], UpstreamReply] = _answer,
              **settings: Any) -> tuple[FastAPI, MemoryUpstream]:
        upstream = MemoryUpstream(handler)
        app = create_app(Settings(**settings), registry=CollectorRegistry(), encoder=encoder,
                         discover=lambda: [], environ=environ or {}, upstream=upstream)
        return app, upstream
    return build


# What a tenant of a shared operator account must not reach with the operator's key.
OTHER_TEAMS = [
    ("GET", "/v1/files", {}),
    ("DELETE", "/v1/files/file-of-another-team", {}),
    ("GET", "/v1/responses/resp_of_another_team", {}),
    ("GET", "/v1/organization/admin_api_keys", {}),
    ("POST", "/v1/messages/batches", ANTHROPIC),
    ("POST", "/v1/completions", {}),
    ("GET", "/v1/models/../files", {}),
    ("GET", "/v1/models/%2e%2e", {}),
    ("POST", "/v1beta/cachedContents", {"x-goog-api-key": "g-caller"}),
]


@pytest.mark.parametrize(("method", "path", "headers"), OTHER_TEAMS)
async def test_a_server_key_is_not_spent_on_paths_the_operator_did_not_list(
        make, method, path, headers):
    app, upstream = make(proxy_tenant_keys=SERVER_KEYS, environ=ENVIRON)
    async with serve(app) as c:
        r = await c.request(method, path, headers=headers,
                            json={"model": "gpt-4.1-mini", "prompt": "hi"}
                            if method == "POST" else None)
    assert upstream.sent == []
    assert r.status_code == 403, r.text
    body = r.json()
    # In the provider's own shape, which its SDK raises as a permission error.
    message = body["error"]["message"]
    assert "server's provider key" in message and "CONTEXTSYNTH_PROXY_SERVER_KEY_ROUTES" \
        in message


async def test_model_lists_and_token_counts_pass_on_the_server_key_by_default(make):
    app, upstream = make(proxy_tenant_keys=SERVER_KEYS, environ=ENVIRON)
    async with serve(app) as c:
        listed = await c.get("/v1/models")
        one = await c.get("/v1/models/gpt-4.1-mini")
        gemini = await c.get("/v1beta/models", headers={"x-goog-api-key": "g-caller"})
        counted = await c.post("/v1beta/models/gemini-2.5-flash:countTokens",
                               json={"contents": []})
    assert [r.status_code for r in (listed, one, gemini, counted)] == [200] * 4
    keys = [s.header("authorization") or s.header("x-goog-api-key") for s in upstream.sent]
    assert keys == [f"Bearer {OPENAI_KEY}", f"Bearer {OPENAI_KEY}", GEMINI_KEY, GEMINI_KEY]


async def test_the_operator_lists_the_routes_a_server_key_may_take(make):
    app, upstream = make(proxy_tenant_keys=SERVER_KEYS, environ=ENVIRON,
                         proxy_server_key_routes=["POST /v1/embeddings"])
    async with serve(app) as c:
        embedded = await c.post("/v1/embeddings", json={"model": "e", "input": "hi"})
        listed = await c.get("/v1/models")
    assert embedded.status_code == 200 and listed.status_code == 403
    assert [s.url.rsplit("/", 1)[-1] for s in upstream.sent] == ["embeddings"]


async def test_a_callers_own_key_still_reaches_any_path(make):
    # Without a server key the caller spends their own: nothing of the operator's at stake.
    app, upstream = make()
    async with serve(app) as c:
        r = await c.get("/v1/files", headers={"authorization": "Bearer sk-caller"})
    assert r.status_code == 200
    [sent] = upstream.sent
    assert sent.header("authorization") == "Bearer sk-caller"


async def test_a_tenant_asks_only_for_the_models_the_operator_listed(make):
    app, upstream = make(proxy_tenant_keys=SERVER_KEYS, environ=ENVIRON,
                         proxy_tenant_models={"default": ["gpt-4.1-mini", "claude-haiku*"]},
                         proxy_mode="off")
    anthropic = {"model": "claude-opus-4-1", "max_tokens": 10,
                 "messages": [{"role": "user", "content": "hi"}]}
    async with serve(app) as c:
        allowed = await c.post("/v1/chat/completions", json=CHAT)
        refused = await c.post("/v1/chat/completions", json={**CHAT, "model": "o3-pro"})
        opus = await c.post("/v1/messages", json=anthropic, headers=ANTHROPIC)
        haiku = await c.post("/v1/messages", json={**anthropic, "model": "claude-haiku-4-5"},
                             headers=ANTHROPIC)
        gemini = await c.post("/v1beta/models/gemini-2.5-pro:generateContent",
                              json={"contents": [{"role": "user", "parts": [{"text": "h"}]}]})
    assert allowed.status_code == 200 and haiku.status_code == 200
    assert refused.status_code == 403
    assert refused.json()["error"]["type"] == "permission_error"
    assert "'o3-pro'" in refused.json()["error"]["message"]
    assert opus.status_code == 403
    assert opus.json() == {"type": "error", "error": {
        "type": "permission_error", "message": opus.json()["error"]["message"]}}
    assert gemini.status_code == 403
    assert gemini.json()["error"]["status"] == "PERMISSION_DENIED"
    assert len(upstream.sent) == 2


@pytest.mark.parametrize("path", ["/v1/chat/completions/", "/v1/Chat/Completions",
                                  "/v1/messages/",
                                  "/v1beta/models/gemini-2.5-pro:generateContent/"])
async def test_a_conversation_route_misspelt_is_refused_not_passed_uncompacted(make, path):
    app, upstream = make()
    async with serve(app) as c:
        r = await c.post(path, json=CHAT, headers={"authorization": "Bearer sk-caller"})
    assert r.status_code == 404, r.text
    assert "spelled exactly" in r.json()["error"]["message"]
    assert upstream.sent == []


async def test_a_passed_through_post_draws_its_tokens(make):
    # A legacy completion spends tokens as a chat does: the same bucket refuses it.
    app, upstream = make(rate_limit_default={"tokens_per_minute": 100})
    prompt = {"model": "gpt-3.5-turbo-instruct", "prompt": "word " * 60}
    async with serve(app) as c:
        first = await c.post("/v1/completions", json=prompt,
                             headers={"authorization": "Bearer sk-caller"})
        second = await c.post("/v1/completions", json=prompt,
                              headers={"authorization": "Bearer sk-caller"})
    assert first.status_code == 200 and second.status_code == 429
    assert second.json()["error"]["type"] == "tokens"
    assert len(upstream.sent) == 1


def test_a_route_the_operator_writes_wrongly_is_refused_at_start_up():
    with pytest.raises(ValidationError, match="write a method and a path"):
        Settings(proxy_server_key_routes=["/v1/models"])


def test_a_pattern_stands_for_one_segment_only():
    policy = ServerKeyPolicy(["GET /v1/models/*"], {})
    policy.check_route("GET", "/v1/models/gpt-4o", "openai")
    for path in ("/v1/models/a/b", "/v1/models", "/v1/models/.."):
        with pytest.raises(ServerKeyRefused):
            policy.check_route("GET", path, "openai")


def test_the_model_comes_from_the_body_or_geminis_path():
    assert requested_model("/v1/chat/completions", {"model": "gpt-4o"}) == "gpt-4o"
    assert requested_model("/v1beta/models/gemini-2.5-pro:countTokens", None) == \
        "gemini-2.5-pro"
    assert requested_model("/v1/files", {"purpose": "x"}) is None


async def test_a_passed_through_answer_is_counted_as_the_providers(make):
    # A provider's 5xx passed on is the provider's: counted among the relayed answers,
    # which the service's own error alert leaves out.
    app, _ = make(handler=lambda _: UpstreamReply.json({"error": {"message": "overloaded"}},
                                                       status=503))
    async with serve(app) as c:
        r = await c.get("/v1/models", headers={"authorization": "Bearer sk-caller"})
        metrics = (await c.get("/metrics")).text
    assert r.status_code == 503
    assert 'contextsynth_proxy_responses_total{status="503",upstream="openai"} 1.0' in metrics
