"""``/summarize-trace`` request and response."""

from __future__ import annotations

import json
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, GetJsonSchemaHandler, model_validator
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from app.api.schemas.common import (
    CacheOut,
    LLMFallback,
    LLMUsageOut,
    ReceiptOut,
    exactly_one_of,
)
from app.engine.jobs.base import LLMJobMode
from app.engine.jobs.trace.plan import TraceRequest
from app.engine.jobs.trace.summarizer import Action, TraceOptions
from app.service.limits import ListBound, count_lines
from app.settings import Settings

T = TypeVar("T", int, float)


def _given(value: T | None, default: T) -> T:
    return default if value is None else value


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


class ActionIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: str = Field(min_length=1, description="The tool the agent called.")
    action_input: str | dict[str, Any] | list[Any] = ""
    observation: str = ""
    outcome: Literal["success", "error", "failure", "timeout"] | None = Field(
        None, description="How the call ended, when the caller knows; error, failure and "
        "timeout are failures (as in /reflect).")
    thought: str | None = None


class _TraceFields(BaseModel):
    model_config = ConfigDict(extra="forbid")

    actions: list[ActionIn] | None = Field(
        None, min_length=1, description="At most CONTEXTSYNTH_MAX_TRACE_ACTIONS (1000 by "
        "default).")
    scratchpad: str | None = Field(
        None, min_length=1, description="ReAct text: Thought / Action / Action Input / "
        "Observation blocks; at most CONTEXTSYNTH_MAX_TRACE_ACTIONS 'Action:' lines, and "
        "CONTEXTSYNTH_MAX_MESSAGE_CHARS characters.")
    trigger: int | None = Field(None, ge=1, description="Summarize past this many actions.")
    keep: int | None = Field(None, ge=0, description="Recent actions kept in full.")
    observation_chars: int | None = Field(None, ge=50)
    large_chars: int | None = Field(None, ge=1000)
    large_trigger: int | None = Field(None, ge=1)
    large_keep: int | None = Field(None, ge=0)
    min_llm_chars: int | None = Field(None, ge=0)
    min_saving: float | None = Field(None, ge=0, le=0.9)
    mode: LLMJobMode = "auto"
    budget_tokens: int | None = Field(
        None, ge=1, description="The most tokens the output text may have: above it the "
        "trace is summarized whatever the trigger says, and when the summary and the "
        "recent actions would pass it, the recent observations are cut shorter, then the "
        "oldest recent actions join the summary, then the summary's lines are cut. 422 when "
        "even that is past it.")


# The LLM fields come last in the published schema, as they always have.
class SummarizeTraceRequest(LLMFallback, _TraceFields):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{
        "actions": [{"action": "list_files", "action_input": "src/",
                     "observation": "main.py\nutil.py"},
                    {"action": "read_file", "action_input": "src/main.py",
                     "observation": "def main(): ..."},
                    {"action": "run_tests", "action_input": "tests/",
                     "observation": "FAILED test_main - AssertionError", "outcome": "error"}],
        "trigger": 2, "keep": 1, "mode": "fast"}]})
    # Counted on the parsed JSON, before the model reads a single action.
    BOUNDS: ClassVar[tuple[ListBound, ...]] = (
        ListBound(("actions",), "max_trace_actions", "actions",
                  "Send the most recent ones, or summarize the trace in parts."),
        ListBound(("scratchpad",), "max_trace_actions", "'Action:' lines (actions)",
                  "Send the most recent actions, or summarize the trace in parts.",
                  count=count_lines(r"^Action:")),
    )

    def to_job(self, settings: Settings) -> TraceRequest:
        actions = None
        if self.actions is not None:
            actions = tuple(Action(a.action, _text(a.action_input), a.observation, a.outcome,
                                   a.thought) for a in self.actions)
        d = settings.trace_options()
        options = TraceOptions(
            _given(self.trigger, d.trigger), _given(self.keep, d.keep),
            _given(self.observation_chars, d.observation_chars),
            _given(self.large_chars, d.large_chars),
            _given(self.large_trigger, d.large_trigger), _given(self.large_keep, d.large_keep),
            _given(self.min_llm_chars, d.min_llm_chars), _given(self.min_saving, d.min_saving),
            self.budget_tokens)
        return TraceRequest(actions, self.scratchpad, options, self.mode)

    @model_validator(mode="after")
    def _one_trace(self) -> SummarizeTraceRequest:
        if (self.actions is None) == (self.scratchpad is None):
            raise ValueError("send the trace as exactly one of 'actions' or 'scratchpad'")
        return self

    @classmethod
    def __get_pydantic_json_schema__(
        cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return exactly_one_of(handler(core_schema), handler, ("actions", "scratchpad"))


class GroupOut(BaseModel):
    tool: str
    calls: int
    summary: str
    paths: list[str]
    errors: list[str]


class TraceStatsOut(BaseModel):
    chars_before: int
    chars_after: int
    tokens_before: int
    tokens_after: int
    reduction: float
    actions_total: int
    actions_summarized: int


class SummarizeTraceResponse(BaseModel):
    scratchpad: str = Field(description="The summary block, then the recent actions.")
    strategy: Literal["none", "deterministic", "llm", "truncation"]
    reason: str
    mode: str
    degraded: bool
    fallback_reason: str | None
    llm: LLMUsageOut | None
    cache: CacheOut
    groups: list[GroupOut]
    recent: list[dict[str, Any]]
    receipt: ReceiptOut = Field(description="The older actions' handle for /expand, and the "
                                "facts they held that the summary lost.")
    stats: TraceStatsOut
