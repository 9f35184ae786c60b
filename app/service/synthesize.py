"""Serving ``/synthesize``: format, limits, mode, the engine off the event loop, metrics."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anyio.to_thread

from app.engine.errors import LimitExceeded
from app.engine.formats import Payload, WireFormat, resolve_format
from app.engine.modes import Mode, ModeDecision, decide
from app.engine.phases import PhaseOptions
from app.engine.reasoning import Resolved, resolve
from app.engine.synthesis import Synthesis, SynthesisOptions, Synthesizer
from app.engine.tiers import Tier, infer_tier
from app.metrics import Metrics
from app.settings import Settings


@dataclass(frozen=True, slots=True)
class SynthesizeJob:
    """One request, already validated for types by the API layer."""

    payload: Payload
    format: str
    model: str | None
    tier: Tier | None
    strategy: str
    reasoning_top: Mapping[str, Any]
    reasoning_strategies: Mapping[str, Mapping[str, Any]]
    phase: PhaseOptions
    steer: bool


@dataclass(frozen=True, slots=True)
class SynthesizeOutcome:
    synthesis: Synthesis
    body: dict[str, Any]  # the conversation, under the keys of its wire format
    messages_before: int
    messages_after: int
    tier: Tier
    tier_source: str
    decision: ModeDecision
    requested_mode: Mode
    resolved: dict[str, Resolved]


class SynthesizeService:
    def __init__(
        self,
        synthesizer: Synthesizer,
        formats: Mapping[str, WireFormat],
        settings: Settings,
        metrics: Metrics,
        *,
        llm_available: bool = False,
    ) -> None:
        self._synthesizer = synthesizer
        self._formats = formats
        self._settings = settings
        self._metrics = metrics
        self._llm_available = llm_available

    async def run(self, job: SynthesizeJob) -> SynthesizeOutcome:
        size = self._check_limits(job.payload)
        wire = resolve_format(self._formats, job.format, job.payload)
        resolved = resolve(job.reasoning_top, job.reasoning_strategies, job.strategy)
        requested = Mode(resolved["synthesis"].value)
        decision = decide(requested, llm_available=self._llm_available)
        tier, tier_source = self._tier(job)
        strategy = resolved.get("synthesis_strategy")
        options = SynthesisOptions(
            mode=decision.mode, tier=tier, phase=job.phase, steer=job.steer,
            strategy=str(strategy.value) if strategy else None,
        )
        if size > self._settings.offload_chars:
            synthesis, body = await anyio.to_thread.run_sync(self._work, wire, job, options)
        else:
            synthesis, body = self._work(wire, job, options)
        self._record(synthesis)
        return SynthesizeOutcome(
            synthesis, body, len(_conversation(job.payload)[1]), len(_conversation(body)[1]),
            tier, tier_source, decision, requested, resolved,
        )

    def _work(
        self, wire: WireFormat, job: SynthesizeJob, options: SynthesisOptions
    ) -> tuple[Synthesis, dict[str, Any]]:
        transcript = wire.parse(job.payload)
        synthesis = self._synthesizer.run(transcript, options)
        if synthesis.compacted:
            body = wire.render(synthesis.transcript)
        else:  # the caller's own fields, as sent
            body = {k: job.payload[k] for k in wire.keys if k in job.payload}
        return synthesis, body

    def _tier(self, job: SynthesizeJob) -> tuple[Tier, str]:
        if job.tier is not None:
            return job.tier, "request"
        inferred = infer_tier(job.model)
        if inferred is not None:
            return inferred, "model"
        return self._settings.default_tier, "default"

    def _check_limits(self, payload: Payload) -> int:
        """Raise on a limit; return the characters of content, to size the work."""
        key, messages = _conversation(payload)
        limit = self._settings.max_messages
        if len(messages) > limit:
            raise LimitExceeded(
                f"the request has {len(messages)} messages; this service accepts at most "
                f"{limit}. Send the most recent {limit}, or compress in parts.",
                pointer=f"/{key}")
        most = self._settings.max_message_chars
        total = 0
        for i, m in enumerate(messages):
            chars = _content_chars(m)
            if chars > most:
                raise LimitExceeded(
                    f"{key}[{i}] has {chars} characters of content; the limit is {most}. "
                    "Cut the message (for example a huge tool output) before sending.",
                    pointer=f"/{key}/{i}")
            total += chars
        return total

    def _record(self, synthesis: Synthesis) -> None:
        m = self._metrics
        m.tokens.labels("synthesize", "in").inc(synthesis.tokens_before)
        m.tokens.labels("synthesize", "out").inc(synthesis.tokens_after)
        if synthesis.tokens_before:
            m.compression.labels("synthesize").observe(
                synthesis.tokens_after / synthesis.tokens_before)
        m.phases.labels(synthesis.phase.value).inc()


def _conversation(payload: Payload) -> tuple[str, list[Any]]:
    """The key and the list of messages, contents or input items."""
    for key in ("messages", "contents", "input"):
        value = payload.get(key)
        if isinstance(value, list):
            return key, value
        if isinstance(value, str):
            return key, [value]
    return "messages", []


# Where text sits in a message, content block, part or item, in any of the formats;
# the values of the last three are tool arguments or results with keys of their own.
_TEXT_KEYS = ("content", "text", "thinking", "parts", "output", "arguments", "summary",
              "tool_calls", "function", "functionResponse", "functionCall")
_FREE_KEYS = ("input", "args", "response")


def _content_chars(value: Any, *, every_key: bool = False) -> int:
    """Characters of text in a message, whatever its format's shape."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return sum(_content_chars(v, every_key=every_key) for v in value)
    if not isinstance(value, dict):
        return 0
    if every_key:
        return sum(_content_chars(v, every_key=True) for v in value.values())
    return (sum(_content_chars(value.get(k)) for k in _TEXT_KEYS)
            + sum(_content_chars(value.get(k), every_key=True) for k in _FREE_KEYS))
