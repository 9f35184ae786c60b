"""The compactors an eval compares: our jobs and modes, and the baselines.

Each takes the OpenAI messages of one call and gives back what the model would
be sent instead, with the originals behind each expand handle it made. Ours run
in process on the engine with the service's default settings (``engine``), or
through a running service (``http``); the baselines are plain list operations.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from app.adapters.tokenizer import pretokenizer
from app.engine.compaction.base import Span
from app.engine.compaction.strategies import builtin_strategies
from app.engine.compaction.tiers import Tier
from app.engine.errors import BudgetTooSmall
from app.engine.jobs.caches import EngineCaches
from app.engine.jobs.history.compressor import HistoryCompressor, HistoryOptions
from app.engine.jobs.synthesize.budget import Budget
from app.engine.jobs.synthesize.modes import Mode
from app.engine.jobs.synthesize.synthesizer import SynthesisOptions, Synthesizer
from app.engine.transcript.formats.openai import OpenAIFormat
from app.engine.transcript.model import Transcript
from app.engine.transcript.tokens import Encoder, TokenCounter
from app.evaluation.seen import Wire

KEEP_LAST = (4, 8, 16, 32)


@dataclass(frozen=True)
class CompactorResult:
    """What the model would be sent, and the originals behind each handle this call
    made (handle -> the messages ``GET /expand`` gives back), for recall with expand."""

    messages: list[Wire]
    behind: dict[str, list[Wire]] = field(default_factory=dict)


class Refused(Exception):
    """A job refused the call (``/synthesize`` with a budget smaller than what must stay:
    the service's 422); the proxy would send the request as it came."""


class Compactor(Protocol):
    @property
    def name(self) -> str: ...

    def compact(self, messages: Sequence[Wire]) -> CompactorResult: ...


@dataclass(frozen=True)
class Baseline:
    """``none`` (everything) or ``keep-last-N``: the system messages and the task, then
    the last N messages, moved later past tool results whose call would be cut."""

    name: str
    last: int | None = None

    def compact(self, messages: Sequence[Wire]) -> CompactorResult:
        return CompactorResult(self._kept(messages))

    def _kept(self, messages: Sequence[Wire]) -> list[Wire]:
        if self.last is None or len(messages) <= self.last:
            return list(messages)
        head = [m for m in messages if m.get("role") == "system"]
        task = next((i for i, m in enumerate(messages) if m.get("role") == "user"), None)
        start = len(messages) - self.last
        while start < len(messages) and messages[start].get("role") == "tool":
            start += 1  # a result without its call would be an orphan
        if task is not None and task < start:
            head.append(messages[task])
        return head + [m for m in messages[start:] if m.get("role") != "system"]


class WireCounter:
    """Tokens of OpenAI messages as the service counts them against ``budget_tokens``
    (the engine's counter: content, calls and a few tokens a message)."""

    def __init__(self, encoder: Encoder) -> None:
        self._counter = TokenCounter(encoder, pretokenizer=pretokenizer(encoder))
        self._wire = OpenAIFormat()

    def __call__(self, messages: Sequence[Wire]) -> int:
        return self._counter.messages(self._wire.parse({"messages": list(messages)}).messages)


@dataclass(frozen=True)
class KeepFit:
    """``keep-fit-<tokens>``: the system messages and the task, then the most recent
    messages, whole, that fit in ``tokens`` beside them (never starting on a tool result
    whose call would be cut): the plain window a budget of that size allows."""

    name: str
    tokens: int
    count: Callable[[Sequence[Wire]], int]

    def compact(self, messages: Sequence[Wire]) -> CompactorResult:
        task = next((i for i, m in enumerate(messages) if m.get("role") == "user"), None)
        head = [i for i, m in enumerate(messages) if m.get("role") == "system" or i == task]
        room = self.tokens - self.count([messages[i] for i in head])
        stop = head[-1] + 1 if head else 0  # the window never reaches into the head
        start = len(messages)
        while start > stop:
            size = self.count([messages[start - 1]])
            if size > room:
                break
            room -= size
            start -= 1
        while start < len(messages) and messages[start].get("role") == "tool":
            start += 1  # a result without its call would be an orphan
        kept = set(head)
        return CompactorResult([messages[i] for i in head]
                               + [m for i, m in enumerate(messages[start:], start)
                                  if i not in kept])


# A request body for one of our jobs, from the messages; the reply holds "messages".
Request = Callable[[Sequence[Wire]], tuple[str, dict[str, Any]]]


def _synthesize(tier: Tier, strategy: str | None = None, budget: int | None = None,
                ) -> Request:
    reasoning: dict[str, Any] = {"synthesis": "custom" if strategy else "fast"}
    if strategy:
        reasoning["synthesis_strategy"] = strategy
    extra: dict[str, Any] = {} if budget is None else {"budget_tokens": budget}
    return lambda m: ("/synthesize", {"messages": list(m), "tier": tier.value,
                                      "reasoning": reasoning, **extra})


def budgeted(budget: int, tier: Tier = Tier.MID) -> tuple[str, Request]:
    """``synthesize-budget-<budget>``: ``fast`` at ``tier`` with ``budget_tokens``."""
    return f"synthesize-budget-{budget}", _synthesize(tier, budget=budget)


def _history(messages: Sequence[Wire]) -> tuple[str, dict[str, Any]]:
    return "/compress-history", {"messages": list(messages), "mode": "fast"}


def our_jobs(tier: Tier) -> dict[str, Request]:
    """Name -> request, for every job and mode the eval scores."""
    jobs: dict[str, Request] = {f"synthesize-fast-{t.value}": _synthesize(t) for t in Tier}
    jobs[f"synthesize-rebuild-{tier.value}"] = _synthesize(tier, "fast-rebuild")
    jobs[f"observation-mask-{tier.value}"] = _synthesize(tier, "observation-mask")
    jobs["compress-history-fast"] = _history
    return jobs


class Engine:
    """Our jobs in process: the engine, as the service runs it, with warm caches."""

    def __init__(self, encoder: Encoder) -> None:
        counter = TokenCounter(encoder, pretokenizer=pretokenizer(encoder))
        caches = EngineCaches()
        self._wire = OpenAIFormat()
        self._synthesizer = Synthesizer(counter, builtin_strategies(), caches)
        self._history = HistoryCompressor(counter, caches)
        self._jobs: dict[str, Callable[[dict[str, Any]], _Answer]] = {
            "/synthesize": self._synthesize, "/compress-history": self._compress}

    def run(self, path: str, body: dict[str, Any]) -> CompactorResult:
        try:
            out, spans = self._jobs[path](body)
        except BudgetTooSmall as exc:
            raise Refused(str(exc)) from exc
        if out is None:  # the service sends the caller's messages back as they were
            return CompactorResult(list(body["messages"]))
        rendered: list[Wire] = self._wire.render(out)["messages"]
        return CompactorResult(rendered, behind(body["messages"], (
            (s.handle, s.first, s.last) for s in spans)))

    def _synthesize(self, body: dict[str, Any]) -> _Answer:
        reasoning = body["reasoning"]
        tokens = body.get("budget_tokens")
        options = SynthesisOptions(mode=Mode(reasoning["synthesis"]), tier=Tier(body["tier"]),
                                   strategy=reasoning.get("synthesis_strategy"),
                                   budget=Budget(tokens) if tokens is not None else None)
        synthesis = self._synthesizer.run(self._wire.parse(body), options)
        if not (synthesis.compacted or synthesis.nudged):
            return None, ()
        return synthesis.transcript, synthesis.receipt.spans

    def _compress(self, body: dict[str, Any]) -> _Answer:
        plan = self._history.plan(self._wire.parse(body), HistoryOptions())
        if not plan.fired:
            return None, ()
        result = self._history.finish(plan, self._history.fast_summary(plan))
        return (result.transcript, result.spans) if result.compressed else (None, ())


# A job's answer in process: the transcript to send (None: the request's, unchanged) and
# the spans it dropped.
_Answer = tuple[Transcript | None, tuple[Span, ...]]


def behind(messages: Sequence[Wire], spans: Iterable[tuple[str, int, int]],
           ) -> dict[str, list[Wire]]:
    """Each handle's originals: the request's messages ``first`` to ``last``."""
    return {handle: list(messages[first:last + 1]) for handle, first, last in spans}


class Service:
    """Our jobs through a running contextsynth at ``url``."""

    def __init__(self, url: str, *, timeout: float = 60.0) -> None:
        self._client = httpx.Client(base_url=url.rstrip("/"), timeout=timeout)

    def run(self, path: str, body: dict[str, Any]) -> CompactorResult:
        response = self._client.post(path, json=body)
        if response.status_code == 422 and BudgetTooSmall.slug in response.text:
            raise Refused(response.text[:300])
        if response.status_code != 200:
            raise RuntimeError(f"POST {path} answered {response.status_code}: "
                               f"{response.text[:300]}")
        answer = response.json()
        dropped = answer.get("receipt", {}).get("dropped", [])
        return CompactorResult(answer["messages"], behind(body["messages"], (
            (d["handle"], d["first"], d["last"]) for d in dropped)))

    def close(self) -> None:
        self._client.close()


class JobCaller(Protocol):
    def run(self, path: str, body: dict[str, Any]) -> CompactorResult: ...


@dataclass(frozen=True)
class Ours:
    name: str
    request: Request
    runner: JobCaller

    def compact(self, messages: Sequence[Wire]) -> CompactorResult:
        path, body = self.request(messages)
        return self.runner.run(path, body)


class Incremental:
    """A job used as an agent uses ``/compress-history``: it keeps the answer as its
    history and appends its new messages to it, so a later call sends the previous
    summary back to be extended (the service keeps no state; the agent does)."""

    def __init__(self, name: str, request: Request, runner: JobCaller) -> None:
        self.name = name
        self._job = Ours(name, request, runner)
        self._source: list[Wire] = []  # the transcript as of the previous call
        self._history: list[Wire] = []  # what the agent held after it

    def compact(self, messages: Sequence[Wire]) -> CompactorResult:
        grown = len(messages) >= len(self._source) > 0 and all(
            a is b for a, b in zip(self._source, messages, strict=False))
        history = [*self._history, *messages[len(self._source):]] if grown else list(messages)
        out = self._job.compact(history)
        self._history = out.messages
        self._source = list(messages)
        return out


# Jobs an agent calls on its own kept history rather than on the whole transcript.
INCREMENTAL = frozenset({"compress-history-fast"})


def compactors(runner: JobCaller, tier: Tier) -> dict[str, Compactor]:
    """Every compactor by name, baselines first."""
    out: dict[str, Compactor] = {"none": Baseline("none")}
    out.update({f"keep-last-{n}": Baseline(f"keep-last-{n}", n) for n in KEEP_LAST})
    out.update({name: (Incremental if name in INCREMENTAL else Ours)(name, request, runner)
                for name, request in our_jobs(tier).items()})
    return out
