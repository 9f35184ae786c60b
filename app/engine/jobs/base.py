"""The shape every job has, so one runner in the service can serve them all.

A job plans first: it reads the request and says whether an LLM call is worth making
(``Plan.prompt``, or None). The service makes that call, or not, and hands the job
what came back: ``finish(plan, reply)`` with the reply's text, with ``Reply(None, why)``
when the call failed, or with None when no call was made. A job that cannot use a
reply raises ``UnusableReply``; the service then falls back (``finish`` with a failed
reply) or, when the request wants errors, answers with one. Every result carries the
same ``Report``, so metrics, handles and events are recorded once, for every job.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, Protocol, TypeVar

from app.engine.compaction.base import Span
from app.engine.prompts import PromptMessage
from app.engine.reading.facts import Facts
from app.engine.transcript.formats import Payload, WireFormat, resolve_format
from app.engine.transcript.model import Transcript

Q = TypeVar("Q", contravariant=True)
S = TypeVar("S")
R = TypeVar("R")
V = TypeVar("V")

# The modes of a job whose LLM call is optional: deep (the LLM's answer), fast (the
# deterministic one), auto (deep when an LLM is configured).
LLMJobMode = Literal["auto", "fast", "deep"]


@dataclass(frozen=True, slots=True)
class ConversationRequest:
    """A request whose input is a conversation in one of the wire formats; the service
    holds its payload to the request limits before the job reads it."""

    payload: Payload
    format: str = "auto"


class ConversationJob:
    """What the jobs that read a conversation share: the wire formats."""

    def __init__(self, formats: Mapping[str, WireFormat]) -> None:
        self._formats = formats

    def size(self, request: ConversationRequest) -> int:
        return 0  # the service measures a conversation when it checks the request limits

    def _read(self, request: ConversationRequest) -> tuple[WireFormat, Transcript]:
        wire = resolve_format(self._formats, request.format, request.payload)
        return wire, wire.parse(request.payload)

    @staticmethod
    def _as_sent(request: ConversationRequest, wire: WireFormat) -> dict[str, Any]:
        """The caller's own conversation fields, as sent: what goes back unchanged."""
        return {k: request.payload[k] for k in wire.keys if k in request.payload}


@dataclass(frozen=True, slots=True)
class NeedsLLM:
    """The request asked for something only an LLM does, and says where."""

    what: str  # "mode 'deep' of /compress-history"
    instead: str  # how to get an answer without one: "ask for mode 'fast'"
    pointer: str | None = "/mode"


@dataclass(frozen=True, slots=True)
class Plan(Generic[S]):
    state: S
    prompt: tuple[PromptMessage, ...] | None = None  # None: no call is worth making
    max_tokens: int = 1000
    needs_llm: NeedsLLM | None = None
    # Events sent before the call (type, data): a call may take long, and these say why
    # it is being made.
    notices: tuple[tuple[str, Mapping[str, Any]], ...] = ()
    resume: Resume[S] | None = None


@dataclass(frozen=True, slots=True)
class Resume(Generic[S]):
    """How a plan's prompt shrinks when the service keeps what an earlier call made of
    the first part of what the prompt covers (the engine keeps nothing between calls).

    ``prefixes`` names the parts that may have a summary, shortest first (a name stands
    for their content): the reply to this plan's prompt summarizes the last, and the
    service keeps it under that name. ``build(n, summary)`` is the plan whose prompt
    updates ``summary``, the summary of the n-th part, with only what follows it."""

    prefixes: tuple[str, ...]
    build: Callable[[int, str], Plan[S]]


@dataclass(frozen=True, slots=True)
class Reply:
    """What the service got for a plan's prompt."""

    text: str | None  # None: the call failed and the job falls back
    failure: str | None = None  # why it failed, "reason: detail"
    model: str | None = None
    cache_hit: bool = False
    cut: bool = False  # the provider stopped at the token limit, not where the model ended

    @property
    def failed(self) -> bool:
        return self.text is None


@dataclass(frozen=True, slots=True)
class Report:
    """What every job reports beside its value."""

    mode: str  # what ran: fast, deep, extractive, ...
    tokens_before: int = 0  # 0: the job does not compress (metrics leave it out)
    tokens_after: int = 0
    # Dropped spans of a conversation, saved for /expand in the request's wire format.
    spans: tuple[Span, ...] = ()
    wire: WireFormat | None = None
    # Facts that were in dropped text and are nowhere in the output.
    lost: Facts = field(default_factory=Facts)
    # Other documents to save for /expand, by handle.
    documents: tuple[tuple[str, Mapping[str, Any]], ...] = ()
    event: tuple[str, Mapping[str, Any]] | None = None
    phase: str | None = None


@dataclass(frozen=True, slots=True)
class Done(Generic[R]):
    value: R
    report: Report


class UnusableReply(Exception):
    """The LLM answered, but not with something the job can use.

    ``repair`` is what to send after the reply to ask once more, when asking again
    may help (a reply that was almost valid JSON)."""

    def __init__(self, detail: str, repair: Sequence[PromptMessage] = ()) -> None:
        super().__init__(detail)
        self.detail = detail
        self.repair = tuple(repair)


class Job(Protocol[Q, S, V]):
    @property
    def name(self) -> str:
        """The job's name in metrics, the LLM cache and logs (``compress-history``)."""

    def size(self, request: Q) -> int:
        """Characters of input, to choose between inline work and a worker thread."""

    def plan(self, request: Q, llm: bool) -> Plan[S]:
        """Read the request; ``llm``: a provider is configured, so a prompt may be used."""

    def finish(self, plan: Plan[S], reply: Reply | None) -> Done[V]:
        """The result, from the reply (None: no call was made); may raise UnusableReply."""


def degraded(reply: Reply | None) -> bool:
    """A call was made and failed: the job ran without the LLM it asked for."""
    return reply is not None and reply.failed

