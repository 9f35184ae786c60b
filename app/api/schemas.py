"""Request and response models: the API contract as published in ``openapi.yaml``."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.config import JsonValue

from app.engine.tiers import Tier

CONVERSATION_KEYS = ("messages", "contents", "input")
PAYLOAD_KEYS = ("messages", "system", "contents", "systemInstruction", "input", "instructions")
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

    messages: list[dict[str, Any]] | None = Field(
        None, min_length=1, description="OpenAI Chat Completions or Anthropic messages.")
    system: str | list[dict[str, Any]] | None = Field(
        None, description="Anthropic: the top-level system prompt.")
    contents: list[dict[str, Any]] | None = Field(
        None, min_length=1, description="Gemini: the conversation's contents.")
    systemInstruction: dict[str, Any] | None = Field(
        None, description="Gemini: the system instruction.")
    input: str | list[dict[str, Any]] | None = Field(
        None, description="OpenAI Responses: the input items.")
    instructions: str | None = Field(None, description="OpenAI Responses: the instructions.")
    format: str = Field("auto", description="auto, openai, anthropic, gemini or responses.")
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
    on_llm_error: Literal["fallback", "error"] = Field(
        "fallback", description="When the LLM fails in deep mode: fall back to fast and say "
        "so (degraded), or answer 502/504.")

    @model_validator(mode="after")
    def _one_conversation(self) -> SynthesizeRequest:
        given = [k for k in CONVERSATION_KEYS if getattr(self, k) is not None]
        if len(given) != 1:
            found = f"got {', '.join(given)}" if given else "got none"
            raise ValueError(
                "send the conversation in exactly one of 'messages' (OpenAI, Anthropic), "
                f"'contents' (Gemini) or 'input' (OpenAI Responses); {found}")
        if self.input == [] or self.input == "":
            raise ValueError("'input' is empty; send at least the task")
        return self

    def payload(self) -> dict[str, Any]:
        """The conversation fields as the caller sent them, for the wire formats."""
        return {k: getattr(self, k) for k in PAYLOAD_KEYS if getattr(self, k) is not None}


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
    kind: Literal["compacted", "summarized", "truncated", "masked"]
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


class LLMUsageOut(BaseModel):
    provider: str
    model: str
    input_tokens: int
    output_tokens: int


class SynthesizeResponse(BaseModel):
    """The conversation comes back under the keys it was sent in; the others are absent."""

    messages: list[dict[str, Any]] | None = None
    system: str | list[dict[str, Any]] | None = None
    contents: list[dict[str, Any]] | None = None
    systemInstruction: dict[str, Any] | None = None
    input: list[dict[str, Any]] | str | None = None
    instructions: str | None = None
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
