"""``/synthesize`` request and response."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator
from pydantic.config import JsonValue

from app.api.schemas.common import (
    CacheOut,
    Conversation,
    ConversationOut,
    LLMUsageOut,
    ReceiptOut,
    StatsOut,
)
from app.engine.compaction.tiers import Tier
from app.engine.jobs.synthesize.budget import Budget
from app.engine.jobs.synthesize.modes import Mode
from app.engine.jobs.synthesize.plan import SynthesizeJobRequest
from app.engine.jobs.synthesize.reasoning import (
    NO_BUNDLE,
    STRATEGIES,
    Bundle,
    Resolved,
    resolve,
)
from app.engine.reading.phases import PhaseOptions
from app.service.jobs import synthesis_defaults
from app.service.llm_call import LLMOptions
from app.settings import Settings

# The engine's names, as Literals: the published schema lists them inline.
if TYPE_CHECKING:
    SynthesisMode = str
    AgentStrategy = str
else:
    SynthesisMode = Literal[tuple(m.value for m in Mode)]
    AgentStrategy = Literal[STRATEGIES]

_EXAMPLE_MESSAGES: list[JsonValue] = [
    {"role": "system", "content": "You are a coding agent. Use the tools to fix the bug."},
    {"role": "user", "content": "Fix the failing test in tests/test_dates.py."},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "bash", "arguments": "{\"command\": \"pytest -x -q\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1",
     "content": "FAILED tests/test_dates.py::test_parse - ValueError: bad month 13"},
]


class ReasoningBundle(BaseModel):
    model_config = ConfigDict(extra="forbid")

    synthesis: SynthesisMode | None = Field(None, description="Synthesis mode.")
    synthesis_model: str | None = Field(None, description="Model for LLM-backed modes.")
    synthesis_provider: str | None = Field(None, description="Provider for LLM-backed modes.")
    synthesis_temperature: float | None = Field(None, ge=0, le=2)
    synthesis_strategy: str | None = Field(
        None, description="Registered strategy for mode 'custom' (e.g. observation-mask).")

    def to_bundle(self) -> Bundle:
        return Bundle(Mode(self.synthesis) if self.synthesis is not None else None,
                      self.synthesis_model, self.synthesis_provider,
                      self.synthesis_temperature, self.synthesis_strategy)


class Reasoning(ReasoningBundle):
    strategies: dict[AgentStrategy, ReasoningBundle] = Field(
        default_factory=dict,
        description="Overrides per agent strategy; they win over the top-level fields. "
        "adaptive has none of its own (it runs the others by turns).")

    @field_validator("strategies")
    @classmethod
    def _no_unused_bundle(cls, value: dict[str, ReasoningBundle]) -> dict[str, ReasoningBundle]:
        # Accepted, such a bundle would be ignored on every request: say so instead.
        unused = sorted(NO_BUNDLE & set(value))
        if unused:
            raise ValueError(
                f"strategies.{unused[0]} would never be used: an {unused[0]} agent runs "
                "the other strategies by turns, so send the one it runs now in 'strategy' "
                "to use its bundle, or put the fields at the top level of 'reasoning'")
        return value


class SynthesizeRequest(Conversation):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [
            {"messages": _EXAMPLE_MESSAGES, "model": "gpt-4o-mini", "iteration": 1,
             "max_iterations": 20, "required_tools": ["bash"],
             "reasoning": {"synthesis": "fast"}},
            {"system": "You are a coding agent.", "tier": "large", "messages": [
                {"role": "user", "content": "Fix the failing test."},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1",
                                                   "name": "bash",
                                                   "input": {"command": "pytest -x -q"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                              "content": "1 failed", "is_error": True}]}]},
            {"systemInstruction": {"parts": [{"text": "You are a coding agent."}]},
             "model": "gemini-2.5-flash", "contents": [
                {"role": "user", "parts": [{"text": "Fix the failing test."}]},
                {"role": "model", "parts": [{"functionCall": {
                    "name": "bash", "args": {"command": "pytest -x -q"}}}]},
                {"role": "user", "parts": [{"functionResponse": {
                    "name": "bash", "response": {"output": "1 failed"}}}]}]},
            {"instructions": "You are a coding agent.", "model": "gpt-5", "input": [
                {"role": "user", "content": "Fix the failing test."},
                {"type": "function_call", "call_id": "call_1", "name": "bash",
                 "arguments": "{\"command\": \"pytest -x -q\"}"},
                {"type": "function_call_output", "call_id": "call_1", "output": "1 failed"}]},
        ]},
    )

    model: str | None = Field(None, description="The agent's model; used to infer the tier.")
    tier: Tier | None = Field(None, description="Overrides the tier inferred from the model.")
    task: str | None = Field(None, description="The task, as deep summaries and "
                             "signals.task read it; defaults to the first user message.")
    iteration: int | None = Field(None, ge=0)
    max_iterations: int | None = Field(None, ge=1)
    required_tools: list[str] = Field(default_factory=list)
    output_tools: list[str] | None = Field(
        None, description="Tools that create the deliverable; default: names that write, "
        "create, save, send, submit or commit.")
    strategy: AgentStrategy = "reactive"
    reasoning: Reasoning = Field(default_factory=Reasoning)
    steer: StrictBool = Field(True, description="Append the phase nudge as the last user message "
                        "when the compaction saved more than the nudge costs: the messages "
                        "never grow. The nudge is in the response either way (mode off "
                        "leaves the messages untouched).")
    on_llm_error: Literal["fallback", "error"] = Field(
        "fallback", description="When the LLM fails in deep mode: fall back to fast and say "
        "so (degraded), or answer 502/504.")
    force_refresh: StrictBool = Field(False, description="Skip the cached LLM result, if any.")
    cache_breakpoints: StrictBool = Field(
        False, description="Anthropic requests only: mark the ends of the stable and "
        "steady prefixes (see 'prefix' in the response) with cache_control breakpoints, "
        "keeping the caller's own and at most 4 in all.")
    budget_tokens: int | None = Field(
        None, ge=1, description="The most tokens the output may have (every mode but off). "
        "Past it the oldest turns condense into one digest, and a newest turn larger than "
        "it has its results cut, with handles. Without it, the output is capped at "
        "CONTEXTSYNTH_BUDGET_SHARE of the model's window when the model's window is "
        "known. 422 when the system prompt, the task and the newest user message alone "
        "are past it.")
    trigger_tokens: int | None = Field(
        None, ge=0, description="At or below this many input tokens the messages go back "
        "exactly as sent (compacted: false, no nudge).")

    def to_job(self, settings: Settings) -> tuple[SynthesizeJobRequest, LLMOptions]:
        r = self.reasoning
        resolved = resolve(r.to_bundle(), {k: v.to_bundle() for k, v in r.strategies.items()},
                           self.strategy)
        request = SynthesizeJobRequest(
            self.payload(), self.format, model=self.model, tier=self.tier,
            resolved=resolved,
            phase=PhaseOptions(
                required_tools=tuple(self.required_tools),
                output_tools=tuple(self.output_tools) if self.output_tools is not None
                else None,
                iteration=self.iteration, max_iterations=self.max_iterations),
            steer=self.steer, task=self.task, cache_breakpoints=self.cache_breakpoints,
            defaults=synthesis_defaults(settings), budget=self._budget())
        provider = resolved.synthesis_provider
        model, temperature = resolved.synthesis_model, resolved.synthesis_temperature
        return request, LLMOptions(
            provider=provider.value if provider else None,
            model=model.value if model else None,
            temperature=temperature.value if temperature else None,
            on_llm_error=self.on_llm_error, force_refresh=self.force_refresh,
            provider_pointer=_pointer(provider, "synthesis_provider"))

    def _budget(self) -> Budget | None:
        if self.budget_tokens is None and self.trigger_tokens is None:
            return None
        return Budget(self.budget_tokens, self.trigger_tokens)


def _pointer(field: Resolved[str] | None, name: str) -> str:
    """Where in the request a resolved reasoning field came from."""
    if field is not None and field.source.startswith("strategies."):
        strategy = field.source.removeprefix("strategies.")
        return f"/reasoning/strategies/{strategy}/{name}"
    return f"/reasoning/{name}"


class ResolvedField(BaseModel):
    value: Any
    source: str = Field(description="strategies.<name>, top-level or default.")


class BreakpointOut(BaseModel):
    message: int = Field(description="Index in 'messages'.")
    block: int = Field(description="Index of the content block in that message.")


class PrefixOut(BaseModel):
    stable_messages: int = Field(description="Leading messages of 'messages' (or the "
                                 "format's list) that every later call sends again as they "
                                 "are, while the agent only appends.")
    stable_tokens: int
    steady_messages: int = Field(description="Leading messages later calls send again as "
                                 "they are until the next block of older turns closes.")
    steady_tokens: int
    cache_breakpoints: list[BreakpointOut] = Field(
        description="The content blocks this service marked with cache_control "
        "(cache_breakpoints).")


class SignalsOut(BaseModel):
    iteration: int
    max_iterations: int | None
    task: str | None
    tools_called: dict[str, int]
    required_missing: list[str] = Field(
        description="Required tools not called yet.")
    required_failed: list[str] = Field(
        description="Required tools that were called but never succeeded (their failures "
        "are in recent_errors while recent).")
    outputs_done: list[str] = Field(
        description="Output tools that succeeded since the user last spoke, a write of only "
        "a scratch file (a reproduction script, a log) not counted.")
    recent_errors: list[str]


class SynthesizeResponse(ConversationOut):
    format: str
    compacted: bool
    mode: str
    requested_mode: str
    mode_reason: str
    degraded: bool = Field(description="An LLM mode failed and a deterministic one ran.")
    fallback_reason: str | None
    llm: LLMUsageOut | None = Field(description="The LLM call made, if any.")
    phase: str
    nudge: str | None
    tier: Tier
    tier_source: Literal["request", "model", "default"]
    signals: SignalsOut
    stats: StatsOut
    receipt: ReceiptOut
    cache: CacheOut
    prefix: PrefixOut
    resolved_config: dict[str, ResolvedField]
