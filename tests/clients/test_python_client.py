"""The Python client (clients/python) against a real ``contextsynth serve`` over loopback:
every job round-trips a real transcript, sync and async; error answers come back as
exceptions with their problem documents; 429 and 503 are retried as Retry-After says
(through a scripted gateway in front of the service, since the service does not answer
them on demand); and API keys."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import formatdate
from typing import Any

import httpx
import pytest
from contextsynth_client import (
    NO_RETRIES,
    ActionIn,
    AsyncClient,
    CallIn,
    Client,
    CompressHistoryRequest,
    InvalidRequest,
    MemoryIn,
    NotFound,
    PastIn,
    RateLimited,
    ReflectRequest,
    RescueRequest,
    RetryPolicy,
    ServerError,
    ServiceUnavailable,
    SummarizeRecallRequest,
    SummarizeTraceRequest,
    SynthesizeRequest,
    Unauthorized,
    UnexpectedResponse,
)
from contextsynth_client.models import Reasoning
from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.support.convert import to_anthropic, to_gemini, to_responses
from tests.support.corpus import load_named
from tests.support.fake_llm import FakeLLM
from tests.support.fake_upstream import FakeUpstream
from tests.support.invariants import (
    check_anthropic,
    check_gemini,
    check_openai,
    check_responses,
)
from tests.support.subprocess_server import running_service
from tests.support.threaded import served
from tests.support.traces import to_actions

CODING_RUN = "minisweagent-ds-chat-dev-pydicom__pydicom-901"
LONG_RUN = "minisweagent-ds-chat-test-1-100-django__django-13265"
TRACE_RUN = "minisweagent-ds-chat-test-1-100-django__django-11099"
SUPPORT_CHAT = "tau-airline-gpt4o-task000"


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream() as server:
        yield server


@pytest.fixture(scope="module")
def url(llm: FakeLLM, upstream: FakeUpstream) -> Iterator[str]:
    """The service with an LLM (a fake one over loopback) and proxy mode's providers."""
    providers = [{"name": "local", "kind": "openai", "base_url": llm.base_url,
                  "model": "fake-1", "api_key_env": "CLIENT_E2E_KEY"}]
    env = {"CONTEXTSYNTH_LLM_PROVIDERS": json.dumps(providers), "CLIENT_E2E_KEY": "sk-e2e",
           "CONTEXTSYNTH_PROXY_OPENAI_URL": f"{upstream.url}/v1"}
    with running_service(env, ready_path="/readyz") as base:
        yield base


@dataclass
class Recorded:
    """What the client got on the wire, to hold its models to it."""

    responses: list[httpx.Response] = field(default_factory=list)

    def hook(self, response: httpx.Response) -> None:
        response.read()
        self.responses.append(response)

    async def ahook(self, response: httpx.Response) -> None:
        await response.aread()
        self.responses.append(response)


@pytest.fixture
def wire() -> Recorded:
    return Recorded()


@pytest.fixture
def client(url: str, wire: Recorded) -> Iterator[Client]:
    http = httpx.Client(event_hooks={"response": [wire.hook]})
    with Client(url, http_client=http) as c:
        yield c
    http.close()


def lost_nothing(answer: BaseModel, wire: Recorded) -> None:
    """The model holds the whole answer: written back out, it is the JSON that came."""
    assert answer.model_dump(mode="json", by_alias=True, exclude_unset=True) == \
        wire.responses[-1].json()


def _calls(run: str, count: int) -> list[CallIn]:
    return [CallIn(tool=a["action"], params=str(a["action_input"]),
                   output=a["observation"], rationale=(a["thought"] or "")[:2000] or None)
            for a in to_actions(load_named(run))[:count]]


def _memories(run: str) -> list[MemoryIn]:
    return [MemoryIn(id=f"m{i}", text=m["content"], layer=m["role"])
            for i, m in enumerate(load_named(run))
            if m["role"] in ("user", "assistant") and isinstance(m.get("content"), str)
            and m["content"].strip()]


# --- every job, sync --------------------------------------------------------------------


def test_synthesize_compacts_a_real_run_and_expand_gives_back_what_it_dropped(client, wire):
    messages = load_named(CODING_RUN)
    answer = client.synthesize(SynthesizeRequest(
        messages=messages, model="gpt-4o-mini", required_tools=["bash"],
        reasoning=Reasoning(synthesis="fast")))
    lost_nothing(answer, wire)
    assert answer.compacted and answer.mode == "fast" and answer.format == "openai"
    assert answer.tier == "mid" and answer.tier_source == "model"
    assert answer.stats.tokens_after < answer.stats.tokens_before
    assert answer.messages is not None and len(answer.messages) < len(messages)
    check_openai(messages, answer.messages)
    span = answer.receipt.dropped[0]
    expanded = client.expand(span.handle)
    lost_nothing(expanded, wire)
    assert expanded.handle == span.handle and expanded.format == "openai"
    assert expanded.messages == messages[span.first:span.last + 1]


@pytest.mark.parametrize(("convert", "check", "keys"), [
    (to_anthropic, check_anthropic, ("system", "messages")),
    (to_gemini, check_gemini, ("systemInstruction", "contents")),
    (to_responses, check_responses, ("instructions", "input")),
], ids=["anthropic", "gemini", "responses"])
def test_synthesize_in_the_other_wire_formats(client, wire, convert, check, keys):
    payload = convert(load_named(CODING_RUN))
    answer = client.synthesize(SynthesizeRequest.model_validate(
        {**payload, "reasoning": {"synthesis": "fast"}}))
    lost_nothing(answer, wire)
    assert answer.compacted
    back = answer.model_dump(by_alias=True, exclude_unset=True)
    assert set(back) & {"system", "messages", "systemInstruction", "contents", "instructions",
                        "input"} == set(keys)
    check(payload, {k: back[k] for k in keys})


def test_synthesize_deep_reports_the_llm_call(client, wire, llm):
    answer = client.synthesize(SynthesizeRequest(messages=load_named(CODING_RUN),
                                                 reasoning=Reasoning(synthesis="deep")))
    lost_nothing(answer, wire)
    assert answer.mode == "deep" and not answer.degraded
    assert answer.llm is not None and answer.llm.model == "fake-1"
    assert answer.resolved_config["synthesis"].value == "deep"


def test_compress_history_in_deep_mode(client, wire, llm):
    messages = load_named(LONG_RUN)[:150]
    answer = client.compress_history(CompressHistoryRequest(messages=messages, mode="deep"))
    lost_nothing(answer, wire)
    assert answer.compressed and answer.mode == "deep" and not answer.incremental
    assert answer.llm is not None and answer.llm.provider == "local"
    assert answer.messages is not None and len(answer.messages) < len(messages)
    assert "noted by the fake model" in json.dumps(answer.messages)
    check_openai(messages, answer.messages)


def test_summarize_trace_and_expand_its_actions(client, wire):
    actions = [ActionIn.model_validate(a) for a in to_actions(load_named(TRACE_RUN))]
    answer = client.summarize_trace(SummarizeTraceRequest(actions=actions, mode="fast"))
    lost_nothing(answer, wire)
    assert answer.strategy == "deterministic"
    assert answer.groups and answer.stats.actions_total == len(actions)
    assert answer.stats.tokens_after < answer.stats.tokens_before
    handle = answer.receipt.dropped[0].handle
    expanded = client.expand(handle)
    assert expanded.format == "trace" and expanded.actions is not None
    assert [a["action"] for a in expanded.actions] == \
        [a.action for a in actions[:len(expanded.actions)]]


def test_rescue_dry_run_then_answer(client, wire, llm):
    messages = load_named(SUPPORT_CHAT)
    dry = client.rescue(RescueRequest(messages=messages, question="Is the booking done?",
                                      dry_run=True))
    lost_nothing(dry, wire)
    assert dry.dry_run and dry.answer is None and dry.llm is None
    assert dry.prompt is not None and dry.prompt[0].role == "system"
    assert dry.evidence.steps > 0
    answered = client.rescue(RescueRequest(messages=messages, question="Is the booking done?"))
    lost_nothing(answered, wire)
    assert answered.answer is not None and answered.answer.startswith("From the evidence")
    assert answered.prompt is None and answered.llm is not None


def test_summarize_recall_cites_only_what_was_given(client, wire):
    memories = _memories(SUPPORT_CHAT)
    given = {m.id for m in memories}
    answer = client.summarize_recall(SummarizeRecallRequest(
        query="Which reservation does the user want to change, and to what?",
        memories=memories, mode="extractive", k=5))
    lost_nothing(answer, wire)
    assert answer.mode == "extractive" and answer.llm is None
    assert answer.summary and not answer.refused
    assert answer.citations and {c.memory_id for c in answer.citations} <= given
    assert set(answer.memories_considered) <= given and len(answer.memories_considered) <= 5


def test_reflect_twice_the_record_as_history(client, wire):
    calls = _calls(CODING_RUN, 12)
    first = client.reflect(ReflectRequest(goal="Fix the failing pydicom test", iteration=1,
                                          tool_calls=calls, mode="fast",
                                          timestamp=datetime(2026, 11, 26, 7, 30, tzinfo=UTC)))
    lost_nothing(first, wire)
    assert first.record.mode == "fast" and len(first.record.calls) == len(calls)
    assert first.record.timestamp is not None and first.record.timestamp.year == 2026
    assert [c.tool for c in first.record.calls] == [c.tool for c in calls]
    assert first.reasoning_context
    second = client.reflect(ReflectRequest(
        goal="Fix the failing pydicom test", iteration=2, tool_calls=_calls(CODING_RUN, 20)[12:],
        history=[PastIn.from_record(first.record)], mode="fast"))
    lost_nothing(second, wire)
    assert second.record.iteration == 2


def test_health_and_readiness(client, wire):
    assert client.health().status == "ok"
    ready = client.ready()
    lost_nothing(ready, wire)
    assert ready.status == "ready" and ready.checks["llm:local"] == "ok"


def test_a_proxied_request_s_receipt(client, wire, url):
    # An agent's SDK pointed at proxy mode; the receipt by the id its answer carries.
    messages = load_named(SUPPORT_CHAT)
    last = max(i for i, m in enumerate(messages) if m["role"] == "assistant")
    proxied = httpx.post(f"{url}/v1/chat/completions", timeout=60,
                         headers={"authorization": "Bearer sk-provider"},
                         json={"model": "gpt-4o-mini", "messages": messages[:last]})
    assert proxied.status_code == 200, proxied.text
    rid = proxied.headers["x-contextsynth-request-id"]
    receipt = client.receipt(rid)
    lost_nothing(receipt, wire)
    assert receipt.request_id == rid
    assert receipt.tokens_before == int(proxied.headers["x-contextsynth-tokens-before"])
    assert receipt.receipt.dropped
    with pytest.raises(NotFound) as caught:
        client.receipt("never-proxied")
    assert caught.value.status == 404


# --- async ------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_async_synthesize_and_expand(url):
    messages = load_named(CODING_RUN)
    async with AsyncClient(url) as client:
        answer = await client.synthesize(SynthesizeRequest(
            messages=messages, reasoning=Reasoning(synthesis="fast")))
        assert answer.compacted and answer.messages is not None
        check_openai(messages, answer.messages)
        span = answer.receipt.dropped[0]
        expanded = await client.expand(span.handle)
        assert expanded.messages == messages[span.first:span.last + 1]


@pytest.mark.anyio
async def test_async_jobs_round_trip(url):
    wire = Recorded()
    async with httpx.AsyncClient(event_hooks={"response": [wire.ahook]}) as http:
        client = AsyncClient(url, http_client=http)
        history = await client.compress_history(CompressHistoryRequest(
            messages=load_named(LONG_RUN)[:150], mode="fast"))
        lost_nothing(history, wire)
        assert history.compressed and history.mode == "fast"
        actions = [ActionIn.model_validate(a) for a in to_actions(load_named(TRACE_RUN))]
        trace = await client.summarize_trace(SummarizeTraceRequest(actions=actions,
                                                                   mode="fast"))
        lost_nothing(trace, wire)
        reflected = await client.reflect(ReflectRequest(
            goal="Fix the failing pydicom test", tool_calls=_calls(CODING_RUN, 5), mode="fast"))
        assert len(reflected.record.calls) == 5
        with pytest.raises(NotFound):
            await client.expand("cs_00000000000000000000")
        await client.aclose()
        assert not http.is_closed  # the caller's own client stays open


# --- problem documents ------------------------------------------------------------------


def test_an_invalid_transcript_raises_its_problem_document(client):
    with pytest.raises(InvalidRequest) as caught:
        client.synthesize(SynthesizeRequest(messages=[{"role": "alien", "content": "hi"}]))
    error = caught.value
    assert error.status == 422 and error.problem.status == 422
    assert error.type.startswith("urn:contextsynth:problem:")
    assert error.title and error.detail and error.problem.instance == "/synthesize"
    assert error.pointer is not None and error.pointer.startswith("/messages/0")
    assert error.request_id  # an extension member, kept
    assert str(error).startswith("422 ")


def test_a_schema_violation_lists_its_errors(client):
    # Two conversations at once: the client sends it, the service refuses it.
    with pytest.raises(InvalidRequest) as caught:
        client.rescue(RescueRequest(messages=load_named(SUPPORT_CHAT)[:4],
                                    contents=[{"role": "user", "parts": [{"text": "hi"}]}],
                                    question="Booked?"))
    problem = caught.value.problem
    assert problem.type == "urn:contextsynth:problem:validation-error"
    assert problem.errors and "exactly one of" in problem.errors[0]["detail"]


def test_an_unknown_handle_is_not_found(client):
    with pytest.raises(NotFound) as caught:
        client.expand("cs_00000000000000000000")
    assert caught.value.pointer == "/handle"
    assert caught.value.type == "urn:contextsynth:problem:handle-not-found"


def test_a_misspelt_option_fails_before_it_is_sent():
    with pytest.raises(ValueError, match="keep_last"):
        CompressHistoryRequest(messages=[{"role": "user", "content": "hi"}],
                               keep_last=3)  # type: ignore[call-arg]


# --- API keys, and a 503 that no retry fixes --------------------------------------------

ALPHA, BETA = "cs-alpha-7f1d3e", "cs-beta-2c9a40"


@pytest.fixture(scope="module")
def keyed_url() -> Iterator[str]:
    """A service with two tenants' keys and no LLM."""
    keys = {hashlib.sha256(k.encode()).hexdigest(): tenant
            for k, tenant in ((ALPHA, "alpha"), (BETA, "beta"))}
    with running_service({"CONTEXTSYNTH_API_KEYS": json.dumps(keys)}) as base:
        yield base


def test_api_keys(keyed_url, monkeypatch):
    request = SynthesizeRequest(messages=load_named(CODING_RUN))
    monkeypatch.delenv("CONTEXTSYNTH_API_KEY", raising=False)
    with Client(keyed_url) as anonymous:
        assert anonymous.health().status == "ok"  # the probes need no key
        with pytest.raises(Unauthorized) as caught:
            anonymous.synthesize(request)
    assert caught.value.status == 401 and "Authorization: Bearer" in caught.value.detail
    with Client(keyed_url, api_key=ALPHA) as alpha, Client(keyed_url, api_key=BETA) as beta:
        handle = alpha.synthesize(request).receipt.dropped[0].handle
        assert alpha.expand(handle).handle == handle
        with pytest.raises(NotFound):  # another tenant's handle
            beta.expand(handle)
    monkeypatch.setenv("CONTEXTSYNTH_API_KEY", ALPHA)
    monkeypatch.setenv("CONTEXTSYNTH_URL", keyed_url)
    with Client() as from_env:
        assert from_env.expand(handle).handle == handle


def test_the_service_s_503_without_retry_after_is_not_retried(keyed_url):
    waits: list[float] = []
    with Client(keyed_url, api_key=ALPHA, sleep=waits.append) as client, \
            pytest.raises(ServiceUnavailable) as caught:
        client.synthesize(SynthesizeRequest(messages=load_named(CODING_RUN),
                                            reasoning=Reasoning(synthesis="deep")))
    assert caught.value.type == "urn:contextsynth:problem:llm-not-configured"
    assert caught.value.retry_after is None and waits == []


# --- retries: a gateway in front of the service -----------------------------------------

NOW = 1_900_000_000.0  # the tests' wall clock, for Retry-After dates


@dataclass
class Scripted:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


def problem(status: int, title: str, **extra: Any) -> bytes:
    return json.dumps({"type": f"https://gateway.example/{status}", "title": title,
                       "status": status, "detail": f"{title}: come back later", **extra}
                      ).encode()


@dataclass
class Gateway:
    """Answers from its script first, then passes requests to the service, as a rate
    limiting gateway would; records each request it got."""

    target: str
    script: list[Scripted] = field(default_factory=list)
    received: list[tuple[str, bytes]] = field(default_factory=list)

    async def handle(self, request: Request) -> Response:
        body = await request.body()
        self.received.append((request.url.path, body))
        if self.script:
            s = self.script.pop(0)
            kind = "application/problem+json" if s.body.startswith(b"{") else "text/html"
            return Response(s.body, s.status, headers=s.headers, media_type=kind)
        async with httpx.AsyncClient(timeout=60) as http:
            answer = await http.request(request.method, f"{self.target}{request.url.path}",
                                        content=body, headers={
                                            "content-type": "application/json"})
        return Response(answer.content, answer.status_code,
                        media_type=answer.headers["content-type"])


@pytest.fixture
def gateway(url: str) -> Iterator[tuple[Gateway, str]]:
    gate = Gateway(url)
    app = Starlette(routes=[Route("/{path:path}", gate.handle, methods=["GET", "POST"])])
    with served(app) as base:
        yield gate, base


def _never(seconds: float) -> None:
    pytest.fail(f"waited {seconds} s for an answer that stands")


def _policy(**options: Any) -> RetryPolicy:
    return RetryPolicy(clock=lambda: NOW, **options)


def test_429_and_503_are_retried_after_what_retry_after_asks(gateway):
    gate, base = gateway
    gate.script = [Scripted(503, {"retry-after": "2"}, problem(503, "Busy")),
                   Scripted(429, {"retry-after": formatdate(NOW + 3, usegmt=True)},
                            problem(429, "Slow down"))]
    waits: list[float] = []
    request = RescueRequest(messages=load_named(SUPPORT_CHAT), question="Booked?",
                            dry_run=True)
    with Client(base, retries=_policy(), sleep=waits.append) as client:
        answer = client.rescue(request)
    assert answer.dry_run and answer.evidence.steps > 0  # the service's answer, at last
    assert waits == [2.0, 3.0]
    assert len(gate.received) == 3 and len({body for _, body in gate.received}) == 1


def test_without_retry_after_the_wait_doubles(gateway):
    gate, base = gateway
    gate.script = [Scripted(503, body=b"<html>upstream connect error</html>")] * 2
    waits: list[float] = []
    with Client(base, retries=_policy(attempts=3, backoff=0.25), sleep=waits.append) as client:
        assert client.health().status == "ok"
    assert waits == [0.25, 0.5]


def test_when_the_tries_run_out_the_last_problem_is_raised(gateway):
    gate, base = gateway
    gate.script = [Scripted(503, {"retry-after": "1"}, problem(503, "Busy", shard=7))] * 3
    waits: list[float] = []
    with Client(base, retries=_policy(attempts=3), sleep=waits.append) as client, \
            pytest.raises(ServiceUnavailable) as caught:
        client.health()
    assert waits == [1.0, 1.0] and len(gate.received) == 3
    error = caught.value
    assert error.retry_after == 1.0 and error.title == "Busy"
    assert error.type == "https://gateway.example/503" and error.extensions == {"shard": 7}


def test_a_wait_longer_than_the_caller_accepts_is_raised_at_once(gateway):
    gate, base = gateway
    gate.script = [Scripted(429, {"retry-after": "120"}, problem(429, "Slow down"))]
    waits: list[float] = []
    with Client(base, retries=_policy(max_wait=10), sleep=waits.append) as client, \
            pytest.raises(RateLimited) as caught:
        client.health()
    assert waits == [] and caught.value.retry_after == 120.0


@pytest.mark.parametrize("retries", [NO_RETRIES, RetryPolicy(statuses=frozenset({429}))])
def test_no_retry_unless_the_policy_says_so(gateway, retries):
    gate, base = gateway
    gate.script = [Scripted(503, {"retry-after": "1"}, problem(503, "Busy"))]
    with Client(base, retries=retries, sleep=_never) as client, \
            pytest.raises(ServiceUnavailable):
        client.health()
    assert len(gate.received) == 1


def test_other_errors_are_not_retried_and_a_page_becomes_a_problem(gateway):
    gate, base = gateway
    gate.script = [Scripted(502, body=b"<html>bad gateway</html>")]
    with Client(base, sleep=_never) as client, pytest.raises(ServerError) as caught:
        client.health()
    problem_doc = caught.value.problem
    assert problem_doc.type == "about:blank" and problem_doc.title == "Bad Gateway"
    assert problem_doc.status == 502 and "bad gateway" in problem_doc.detail


def test_a_success_that_is_not_the_answer_raises(gateway):
    gate, base = gateway
    gate.script = [Scripted(200, body=b'{"hello": "world"}')]
    with Client(base) as client, pytest.raises(UnexpectedResponse):
        client.health()


@pytest.mark.anyio
async def test_the_async_client_retries_too(gateway):
    gate, base = gateway
    gate.script = [Scripted(429, {"retry-after": "4"}, problem(429, "Slow down")),
                   Scripted(503, body=b"<html>starting</html>")]
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    async with AsyncClient(base, retries=_policy(backoff=0.5), sleep=sleep) as client:
        answer = await client.summarize_recall(SummarizeRecallRequest(
            query="Which flight?", memories=_memories(SUPPORT_CHAT), mode="extractive"))
    assert answer.summary and waits == [4.0, 1.0]
    assert len(gate.received) == 3

