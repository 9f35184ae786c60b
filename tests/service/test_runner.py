"""The runner's paths, with a hand-written gateway: fallback, error, cache hit, an
unusable reply (asked once more when the job can say what was wrong), and jobs that
need an LLM when none is configured."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from app.adapters.llm.base import Completion, LLMBadResponse, LLMTimeout, Usage
from app.adapters.metrics import Metrics
from app.engine.compaction.strategies import builtin_strategies
from app.engine.errors import InvalidTranscript, LLMNotConfigured
from app.engine.jobs.caches import EngineCaches
from app.engine.jobs.history.compressor import HistoryOptions
from app.engine.jobs.history.plan import HistoryRequest
from app.engine.jobs.recall.answer import Memory
from app.engine.jobs.recall.plan import RecallRequest
from app.engine.jobs.reflect.plan import ReflectJobRequest
from app.engine.jobs.reflect.reflector import Call
from app.engine.jobs.trace.plan import TraceRequest
from app.engine.jobs.trace.summarizer import Action, TraceOptions
from app.engine.prompts import PromptMessage
from app.engine.transcript.formats import build_formats
from app.engine.transcript.tokens import TokenCounter
from app.service.jobs import Jobs
from app.service.llm_call import Answer, CacheInfo, LLMOptions
from app.service.runner import Runner
from app.settings import Settings

pytestmark = pytest.mark.anyio


class FakeGateway:
    """Answers from a list, one per call, and keeps every prompt it was asked."""

    def __init__(self, *answers: Answer | Exception) -> None:
        self._answers = list(answers)
        self.prompts: list[list[PromptMessage]] = []
        self.jobs: list[str] = []
        self.settled: list[bool] = []

    async def ask(self, prompt: Sequence[PromptMessage], options: LLMOptions, *, tenant: str,
                  job: str, max_tokens: int, ttl_s: float | None = None) -> Answer:
        self.prompts.append(list(prompt))
        self.jobs.append(job)
        answer = self._answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def check(self, options: LLMOptions) -> None:
        pass

    async def settle(self, answer: Answer, *, used: bool) -> None:
        self.settled.append(used)


class Events:
    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []

    async def emit(self, event_type: str, tenant: str, data: dict[str, Any]) -> str:
        self.sent.append((event_type, data))
        return "msg_1"


def _reply(text: str) -> Answer:
    return Answer(Completion(text, "fake-model", "fake", Usage(10, 5)))


@pytest.fixture
def jobs(encoder: Any) -> Jobs:
    return Jobs(TokenCounter(encoder), builtin_strategies(), EngineCaches(),
                      build_formats())


def _runner(gateway: FakeGateway | None, events: Events | None = None
            ) -> tuple[Runner, Metrics]:
    metrics = Metrics(CollectorRegistry())
    runner = Runner(build_formats(), Settings(), metrics, gateway, None,
                    events, cache_ttl_s={"summarize-recall": 60.0})
    return runner, metrics


def _history() -> HistoryRequest:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You book flights."},
                                      {"role": "user", "content": "Rebook me to SEA."}]
    for n in range(6):
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [{
                "id": f"c{n}", "type": "function",
                "function": {"name": "search", "arguments": json.dumps({"day": n})}}]},
            {"role": "tool", "tool_call_id": f"c{n}", "content": "\n".join(
                f"flight HAT{n:03}{k} leaves at {k:02}:00, economy ${120 + k}, seats left {k}"
                for k in range(30))}]
    messages.append({"role": "assistant", "content": "Found them."})
    return HistoryRequest({"messages": messages}, "auto",
                          HistoryOptions(trigger_messages=4, keep_last_n=2), "auto")


def _trace() -> TraceRequest:
    actions = tuple(Action("read_file", f"src/mod{n}.py", "x = 1\n" * 200) for n in range(8))
    return TraceRequest(actions, None, TraceOptions(trigger=3, keep=2, min_llm_chars=0))


async def test_a_failed_call_falls_back_and_says_why(jobs: Jobs) -> None:
    events = Events()
    gateway = FakeGateway(Answer(None, "timeout: the provider took too long"))
    runner, _ = _runner(gateway, events)
    ran = await runner.run(jobs.history, _history(), LLMOptions(), "t1")
    assert ran.fallback_reason == "timeout: the provider took too long"
    assert ran.report.mode == "fast" and ran.value.result.compressed
    assert gateway.jobs == ["compress-history"]
    [(kind, data)] = events.sent
    assert kind == "history.compressed" and data["degraded"] is True


async def test_an_error_surfaces_when_the_request_wants_errors(jobs: Jobs) -> None:
    runner, _ = _runner(FakeGateway(LLMTimeout("took 30 s")))
    with pytest.raises(LLMTimeout):
        await runner.run(jobs.history, _history(), LLMOptions(on_llm_error="error"), "t1")


async def test_a_cached_answer_is_used_and_reported(jobs: Jobs) -> None:
    events = Events()
    cached = Answer(Completion("Mia sits by the aisle [m1].", "fake-model", "fake",
                               Usage(10, 5)), cache=CacheInfo(True, 3.0))
    runner, _ = _runner(FakeGateway(cached), events)
    request = RecallRequest("Which seat does Mia like?",
                            (Memory("m1", "Mia always books an aisle seat."),), mode="auto")
    ran = await runner.run(jobs.recall, request, LLMOptions(), "t1")
    assert ran.cache.hit and ran.cache.key_age_seconds == 3.0
    assert ran.report.mode == "deep" and ran.fallback_reason is None
    assert ran.value.answer.summary.startswith("Mia sits by the aisle")
    assert events.sent[-1][1]["cache_hit"] is True


async def test_an_unusable_reply_falls_back_and_is_counted(jobs: Jobs) -> None:
    runner, metrics = _runner(FakeGateway(_reply("I summarized nothing useful.")))
    ran = await runner.run(jobs.trace, _trace(), LLMOptions(), "t1")
    assert ran.fallback_reason is not None
    assert ran.fallback_reason.startswith("bad_response: no line of the reply keeps")
    assert ran.value.result.strategy == "deterministic" and ran.report.mode == "fast"
    assert ran.completion is not None  # the call was made and is reported
    assert metrics.registry.get_sample_value(
        "contextsynth_fallbacks_total", {"reason": "bad_response"}) == 1


async def test_an_unusable_reply_is_an_error_when_asked(jobs: Jobs) -> None:
    runner, _ = _runner(FakeGateway(_reply("nothing")))
    with pytest.raises(LLMBadResponse):
        await runner.run(jobs.trace, _trace(), LLMOptions(on_llm_error="error"), "t1")


async def test_a_reply_the_job_can_repair_is_asked_for_once_more(jobs: Jobs) -> None:
    good = json.dumps({"calls": [{"relevance": "high", "insights": ["month 13 is invalid"],
                                  "learning": "parse rejects month 13",
                                  "next_suggested_actions": ["fix the parser"]}],
                       "synthesis": "The parser fails on month 13.",
                       "progress_assessment": "advancing"})
    gateway = FakeGateway(_reply("not json at all"), _reply(good))
    runner, _ = _runner(gateway)
    request = ReflectJobRequest("Fix test_parse", (Call("bash", "pytest -x", "FAILED bad month"),))
    ran = await runner.run(jobs.reflect, request, LLMOptions(), "t1")
    assert ran.report.mode == "deep" and ran.fallback_reason is None
    assert ran.value.synthesis == "The parser fails on month 13."
    first, second = gateway.prompts
    assert second[: len(first)] == first
    assert second[len(first)] == PromptMessage("assistant", "not json at all")
    assert "valid" in second[-1].content.lower() or "json" in second[-1].content.lower()


async def test_a_second_unusable_reply_falls_back(jobs: Jobs) -> None:
    gateway = FakeGateway(_reply("not json"), _reply("still not json"))
    runner, _ = _runner(gateway)
    request = ReflectJobRequest("Fix test_parse", (Call("bash", "pytest -x", "FAILED"),))
    ran = await runner.run(jobs.reflect, request, LLMOptions(), "t1")
    assert len(gateway.prompts) == 2
    assert ran.report.mode == "fast"
    assert ran.fallback_reason is not None and "reflection JSON" in ran.fallback_reason


async def test_deep_without_an_llm_is_one_clear_error_after_validation(jobs: Jobs) -> None:
    runner, _ = _runner(None)
    deep = HistoryRequest(_history().payload, "auto", HistoryOptions(), "deep")
    with pytest.raises(LLMNotConfigured) as raised:
        await runner.run(jobs.history, deep, LLMOptions(), "t1")
    assert raised.value.detail.startswith("mode 'deep' of /compress-history needs an LLM")
    assert "ask for mode 'fast'" in raised.value.detail and raised.value.pointer == "/mode"
    broken = HistoryRequest({"messages": [{"role": "tool", "tool_call_id": "x",
                                           "content": "orphan"}]}, "auto", HistoryOptions(),
                            "deep")
    with pytest.raises(InvalidTranscript):  # the request is read before the LLM is missed
        await runner.run(jobs.history, broken, LLMOptions(), "t1")


async def test_without_an_llm_auto_runs_the_deterministic_path(jobs: Jobs) -> None:
    runner, _ = _runner(None)
    ran = await runner.run(jobs.history, _history(), LLMOptions(), "t1")
    assert ran.report.mode == "fast" and ran.fallback_reason is None
    assert ran.value.result.compressed and ran.completion is None
