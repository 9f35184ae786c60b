"""``/summarize-recall`` request and response."""

from __future__ import annotations

from typing import ClassVar

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, StrictBool

from app.api.schemas.common import CacheOut, LLMFallback, LLMUsageOut
from app.engine.jobs.recall.answer import Memory
from app.engine.jobs.recall.plan import RecallMode, RecallRequest
from app.service.limits import ListBound


class MemoryIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=120)
    text: str
    score: float | None = None
    layer: str | None = Field(None, description="The memory's layer (also taken as "
                              "depth_layer, the seeds' name).",
                              validation_alias=AliasChoices("layer", "depth_layer"))


class SummarizeRecallRequest(LLMFallback):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{
        "query": "Which seat does Mia prefer?",
        "memories": [{"id": "m1", "text": "Mia always books an aisle seat.", "score": 0.9},
                     {"id": "m2", "text": "Mia's user id is mia_li_3668.", "score": 0.4}],
        "mode": "extractive"}]})
    # Counted on the parsed JSON, before the model reads a single memory.
    BOUNDS: ClassVar[tuple[ListBound, ...]] = (
        ListBound(("memories",), "max_recall_memories", "memories",
                  "Send the best-ranked ones (only the top k are read), or fewer."),
    )

    query: str = Field(min_length=1)
    memories: list[MemoryIn] = Field(
        min_length=1, description="At most CONTEXTSYNTH_MAX_RECALL_MEMORIES (1000 by "
        "default).")
    k: int = Field(10, ge=1, le=100, description="Memories to synthesize from.")
    max_tokens: int = Field(500, ge=16, le=4000, description="Longest answer.")
    include_citations: StrictBool = True
    mode: RecallMode = Field(
        "auto", description="deep: the LLM; extractive: cited sentences, no LLM; auto: deep "
        "when a provider is configured.")

    def to_job(self) -> RecallRequest:
        return RecallRequest(self.query, tuple(Memory(m.id, m.text, m.score, m.layer)
                                               for m in self.memories),
                             self.k, self.max_tokens, self.mode)


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
    removed_claims: list[str] = Field(
        default_factory=list, description="Sentences of the answer no given memory was cited "
        "for: removed, as nothing the caller sent supports them.")
    flagged_claims: list[str] = Field(
        default_factory=list, description="Kept claims whose cited memories share none of "
        "their numbers, names or identifiers: check them.")
    memories_considered: list[str]
    mode: str
    degraded: bool
    fallback_reason: str | None
    cache_hit: bool
    cache: CacheOut
    llm: LLMUsageOut | None


