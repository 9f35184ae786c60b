"""Request and response models: the API contract as published in ``openapi.yaml``."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.config import JsonValue

from app.engine.tiers import Tier

SynthesisMode = Literal["auto", "fast", "deep", "custom", "off"]
AgentStrategy = Literal["reactive", "planExecute", "treeOfThought", "reflexion", "adaptive"]

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


class Reasoning(ReasoningBundle):
    strategies: dict[AgentStrategy, ReasoningBundle] = Field(
        default_factory=dict,
        description="Overrides per agent strategy; they win over the top-level fields.")


class SynthesizeRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{
            "messages": _EXAMPLE_MESSAGES, "model": "gpt-4o-mini", "iteration": 1,
            "max_iterations": 20, "required_tools": ["bash"],
            "reasoning": {"synthesis": "fast"},
        }]},
    )

    messages: list[dict[str, Any]] = Field(
        min_length=1, description="The transcript, in its own wire format.")
    system: str | list[dict[str, Any]] | None = Field(
        None, description="Anthropic only: the top-level system prompt.")
    format: str = Field("auto", description="auto, openai or anthropic.")
    model: str | None = Field(None, description="The agent's model; used to infer the tier.")
    tier: Tier | None = Field(None, description="Overrides the tier inferred from the model.")
    task: str | None = Field(None, description="The task; defaults to the first user message.")
    iteration: int | None = Field(None, ge=0)
    max_iterations: int | None = Field(None, ge=1)
    required_tools: list[str] = Field(default_factory=list)
    output_tools: list[str] | None = Field(
        None, description="Tools that create the deliverable; default: names that write, "
        "create, save, send, submit or commit.")
    strategy: AgentStrategy = "reactive"
    reasoning: Reasoning = Field(default_factory=Reasoning)
    steer: bool = Field(True, description="Append the phase nudge as the last user message.")


class ResolvedField(BaseModel):
    value: Any
    source: str = Field(description="strategies.<name>, top-level or default.")


class SignalsOut(BaseModel):
    iteration: int
    max_iterations: int | None
    task: str | None
    tools_called: dict[str, int]
    required_missing: list[str]
    outputs_done: list[str]
    recent_errors: list[str]


class StatsOut(BaseModel):
    tokens_before: int
    tokens_after: int
    messages_before: int
    messages_after: int
    reduction: float = Field(description="1 - tokens_after / tokens_before.")


class SpanOut(BaseModel):
    handle: str
    kind: Literal["compacted", "truncated", "masked"]
    first: int = Field(description="Index of the first input message in the span.")
    last: int
    messages: int
    tools: list[str]


class LostFactsOut(BaseModel):
    total: int
    paths: list[str]
    identifiers: list[str]
    numbers: list[str]
    errors: list[str]


class ReceiptOut(BaseModel):
    dropped: list[SpanOut]
    lost_facts: LostFactsOut


class CacheOut(BaseModel):
    hit: bool


class SynthesizeResponse(BaseModel):
    messages: list[dict[str, Any]]
    system: str | list[dict[str, Any]] | None = Field(
        None, description="Anthropic only; absent for other formats.")
    format: str
    compacted: bool
    mode: str
    requested_mode: str
    mode_reason: str
    phase: str
    nudge: str | None
    tier: Tier
    tier_source: Literal["request", "model", "default"]
    signals: SignalsOut
    stats: StatsOut
    receipt: ReceiptOut
    cache: CacheOut
    resolved_config: dict[str, ResolvedField]


class Problem(BaseModel):
    """RFC 9457 problem details."""

    type: str
    title: str
    status: int
    detail: str
    instance: str | None = None
    pointer: str | None = None
    errors: list[dict[str, str]] | None = None


class Health(BaseModel):
    status: str
    checks: dict[str, str] = Field(default_factory=dict)
