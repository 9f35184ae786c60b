"""``/summarize-trace`` request and response."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, GetJsonSchemaHandler, StrictBool, model_validator
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from app.api.schemas.common import CacheOut, LLMUsageOut, ReceiptOut

THRESHOLDS = ("trigger", "keep", "observation_chars", "large_chars", "large_trigger",
              "large_keep", "min_llm_chars", "min_saving")


class ActionIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: str = Field(min_length=1, description="The tool the agent called.")
    action_input: str | dict[str, Any] | list[Any] = ""
    observation: str = ""
    outcome: Literal["success", "error"] | None = None
    thought: str | None = None


class SummarizeTraceRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{
        "actions": [{"action": "list_files", "action_input": "src/",
                     "observation": "main.py\nutil.py"},
                    {"action": "read_file", "action_input": "src/main.py",
                     "observation": "def main(): ..."},
                    {"action": "run_tests", "action_input": "tests/",
                     "observation": "FAILED test_main - AssertionError", "outcome": "error"}],
        "trigger": 2, "keep": 1, "mode": "fast"}]})

    actions: list[ActionIn] | None = Field(None, min_length=1)
    scratchpad: str | None = Field(
        None, min_length=1, description="ReAct text: Thought / Action / Action Input / "
        "Observation blocks.")
    trigger: int | None = Field(None, ge=1, description="Summarize past this many actions.")
    keep: int | None = Field(None, ge=0, description="Recent actions kept in full.")
    observation_chars: int | None = Field(None, ge=50)
    large_chars: int | None = Field(None, ge=1000)
    large_trigger: int | None = Field(None, ge=1)
    large_keep: int | None = Field(None, ge=0)
    min_llm_chars: int | None = Field(None, ge=0)
    min_saving: float | None = Field(None, ge=0, le=0.9)
    mode: Literal["auto", "fast", "deep"] = "auto"
    synthesis_provider: str | None = None
    synthesis_model: str | None = None
    synthesis_temperature: float | None = Field(None, ge=0, le=2)
    on_llm_error: Literal["fallback", "error"] = "fallback"
    force_refresh: StrictBool = Field(False, description="Skip the cached LLM result, if any.")

    @model_validator(mode="after")
    def _one_trace(self) -> SummarizeTraceRequest:
        if (self.actions is None) == (self.scratchpad is None):
            raise ValueError("send the trace as exactly one of 'actions' or 'scratchpad'")
        return self

    @classmethod
    def __get_pydantic_json_schema__(
        cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        json_schema = handler(core_schema)
        target = handler.resolve_ref_schema(json_schema)
        target["oneOf"] = [{"required": ["actions"]}, {"required": ["scratchpad"]}]
        return json_schema


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
