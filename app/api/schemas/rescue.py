"""``/rescue`` request and response."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, StrictBool

from app.api.schemas.common import EXAMPLE_CHAT, CacheOut, Conversation, LLMFallback, LLMUsageOut
from app.engine.jobs.rescue.plan import RescueJobRequest
from app.settings import Settings


class _RescueFields(Conversation):

    question: str = Field(min_length=1, description="What the user asked the agent.")
    max_steps: int | None = Field(None, ge=1, description="The agent's step limit.")
    dry_run: StrictBool = Field(False, description="Return the prompt without calling the LLM.")
    budget_tokens: int | None = Field(
        None, ge=1, description="The most tokens the prompt sent to the LLM may have "
        "(instructions, question and evidence): the evidence is shrunk until it fits, as "
        "well as CONTEXTSYNTH_RESCUE_EVIDENCE_CHARS. 422 when the instructions and the "
        "question alone leave it no room.")


# The LLM fields come last in the published schema, as they always have.
class RescueRequest(LLMFallback, _RescueFields):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{
        "messages": EXAMPLE_CHAT, "question": "Is the flight booked?", "max_steps": 3,
        "dry_run": True}]})

    def to_job(self, settings: Settings) -> RescueJobRequest:
        return RescueJobRequest(self.payload(), self.format, self.question, self.max_steps,
                                self.dry_run, settings.rescue_evidence_chars,
                                settings.rescue_max_tokens, self.budget_tokens)


class PromptMessageOut(BaseModel):
    role: str
    content: str


class EvidenceOut(BaseModel):
    steps: int
    chars: int
    compacted: bool = Field(description="Some evidence was shrunk to fit the budget.")
    tokens: int | None = Field(None, description="The prompt's tokens, counted when "
                               "'budget_tokens' was sent.")


class RescueResponse(BaseModel):
    answer: str | None = Field(description="Absent on a dry run.")
    dry_run: bool
    prompt: list[PromptMessageOut] | None = Field(description="Only on a dry run.")
    evidence: EvidenceOut
    degraded: bool = Field(description="The model gave no answer (the call failed, or its "
                           "reply apologised or refused and quoted nothing from the "
                           "evidence): the answer quotes the evidence instead.")
    degraded_reason: str | None
    llm: LLMUsageOut | None
    cache: CacheOut
