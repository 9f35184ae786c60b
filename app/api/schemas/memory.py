"""``/summarize-recall`` and ``/reflect`` requests and responses."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool

from app.api.schemas.common import CacheOut, LLMUsageOut


class _LLMFields(BaseModel):
    model_config = ConfigDict(extra="forbid")

    synthesis_provider: str | None = None
    synthesis_model: str | None = None
    synthesis_temperature: float | None = Field(None, ge=0, le=2)
    on_llm_error: Literal["fallback", "error"] = "fallback"
    force_refresh: StrictBool = Field(False, description="Skip the cached LLM result, if any.")


class MemoryIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=120)
    text: str
    score: float | None = None
    layer: str | None = None


class SummarizeRecallRequest(_LLMFields):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{
        "query": "Which seat does Mia prefer?",
        "memories": [{"id": "m1", "text": "Mia always books an aisle seat.", "score": 0.9},
                     {"id": "m2", "text": "Mia's user id is mia_li_3668.", "score": 0.4}],
        "mode": "extractive"}]})

    query: str = Field(min_length=1)
    memories: list[MemoryIn] = Field(min_length=1, max_length=1000)
    k: int = Field(10, ge=1, le=100, description="Memories to synthesize from.")
    max_tokens: int = Field(500, ge=16, le=4000, description="Longest answer.")
    include_citations: StrictBool = True
    mode: Literal["auto", "deep", "extractive"] = Field(
        "auto", description="deep: the LLM; extractive: cited sentences, no LLM; auto: deep "
        "when a provider is configured.")


class CitationOut(BaseModel):
    memory_id: str
    snippet: str
    score: float | None
    layer: str | None


class SummarizeRecallResponse(BaseModel):
    summary: str
    refused: bool = Field(description="The memories do not support an answer.")
    citations: list[CitationOut]
    sources_used: list[str]
    removed_citations: list[str] = Field(description="Ids the model cited that were not given.")
    memories_considered: list[str]
    mode: str
    degraded: bool
    fallback_reason: str | None
    cache_hit: bool
    cache: CacheOut
    llm: LLMUsageOut | None


class CallIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tool: str = Field(min_length=1)
    params: dict[str, Any] | str = Field(default_factory=dict)
    output: str = Field("", description="The raw output.")
    outcome: Literal["success", "error"] | None = None
    duration_ms: float | None = Field(None, ge=0)
    cost: float | None = Field(None, ge=0)


class PastCallIn(CallIn):
    """A call of an earlier record; its enrichment fields are accepted and ignored."""

    model_config = ConfigDict(extra="ignore")


class PastIn(BaseModel):
    """An earlier iteration: the 'record' of an earlier /reflect answer fits here."""

    model_config = ConfigDict(extra="ignore")

    iteration: int | None = None
    progress_assessment: Literal["advancing", "stuck", "regressing"] | None = None
    calls: list[PastCallIn] = Field(default_factory=list)


class ReflectRequest(_LLMFields):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{
        "goal": "Find why test_parse fails",
        "iteration": 3,
        "tool_calls": [{"tool": "bash", "params": {"command": "pytest -x"},
                        "output": "FAILED test_parse - ValueError: bad month"}],
        "mode": "fast"}]})

    goal: str = Field(min_length=1)
    iteration: int | None = Field(None, ge=0)
    tool_calls: list[CallIn] = Field(min_length=1)
    history: list[PastIn] = Field(default_factory=list)
    mode: Literal["auto", "deep", "fast"] = "auto"


class EnrichedCallOut(BaseModel):
    tool: str
    params: dict[str, Any] | str
    output: str = Field(description="Kept to about 1000 characters, for debugging.")
    outcome: Literal["success", "error"]
    duration_ms: float | None
    cost: float | None
    insights: list[str]
    learning: str
    relevance: Literal["high", "medium", "low"]
    next_suggested_actions: list[str]


class RecordOut(BaseModel):
    iteration: int | None
    goal: str
    calls: list[EnrichedCallOut]
    synthesis: str
    progress_assessment: Literal["advancing", "stuck", "regressing"]


class ReflectResponse(BaseModel):
    record: RecordOut
    reasoning_context: str = Field(description="One line per call, most relevant first.")
    stuck: bool
    stuck_reason: str | None
    recovery_prompt: str | None
    mode: str
    degraded: bool
    fallback_reason: str | None
    cache: CacheOut
    llm: LLMUsageOut | None
