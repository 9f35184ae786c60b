"""``/rescue`` request and response."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, StrictBool

from app.api.schemas.common import EXAMPLE_CHAT, CacheOut, Conversation, LLMUsageOut


class RescueRequest(Conversation):
    model_config = ConfigDict(json_schema_extra={"examples": [{
        "messages": EXAMPLE_CHAT, "question": "Is the flight booked?", "max_steps": 3,
        "dry_run": True}]})

    question: str = Field(min_length=1, description="What the user asked the agent.")
    max_steps: int | None = Field(None, ge=1, description="The agent's step limit.")
    dry_run: StrictBool = Field(False, description="Return the prompt without calling the LLM.")
    synthesis_provider: str | None = None
    synthesis_model: str | None = None
    synthesis_temperature: float | None = Field(None, ge=0, le=2)
    force_refresh: StrictBool = Field(False, description="Skip the cached LLM result, if any.")


class PromptMessageOut(BaseModel):
    role: str
    content: str


class EvidenceOut(BaseModel):
    steps: int
    chars: int
    compacted: bool = Field(description="Some evidence was shrunk to fit the budget.")


class RescueResponse(BaseModel):
    answer: str | None = Field(description="Absent on a dry run.")
    dry_run: bool
    prompt: list[PromptMessageOut] | None = Field(description="Only on a dry run.")
    evidence: EvidenceOut
    llm: LLMUsageOut | None
    cache: CacheOut
