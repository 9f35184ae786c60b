"""``/compress-history`` request and response."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, StrictBool

from app.api.schemas.common import (
    EXAMPLE_CHAT,
    CacheOut,
    Conversation,
    ConversationOut,
    LLMUsageOut,
    ReceiptOut,
    StatsOut,
)


class CompressHistoryRequest(Conversation):
    model_config = ConfigDict(json_schema_extra={"examples": [{
        "messages": EXAMPLE_CHAT, "trigger_messages": 4, "keep_last_n": 2, "mode": "fast"}]})

    trigger_messages: int | None = Field(
        None, ge=1, description="Compress above this many messages (default from settings, 50).")
    trigger_tokens: int | None = Field(
        None, ge=1, description="Also compress above this many tokens.")
    trigger_share: float | None = Field(
        None, gt=0, le=1, description="Also compress above this share of the model's context "
        "window (0.75: three quarters); needs 'model' of a known family or 'context_window'.")
    model: str | None = Field(None, description="The model the history is for, e.g. gpt-4o; "
                              "used with 'trigger_share'.")
    context_window: int | None = Field(
        None, ge=1, description="The model's context window in tokens, when 'model' is not "
        "enough to know it.")
    keep_last_n: int | None = Field(
        None, ge=0, description="Messages kept verbatim at the end (default 10).")
    mode: Literal["auto", "fast", "deep"] = Field(
        "auto", description="deep: LLM summary; fast: deterministic extraction; auto: deep "
        "when an LLM is configured.")
    synthesis_provider: str | None = None
    synthesis_model: str | None = None
    synthesis_temperature: float | None = Field(None, ge=0, le=2)
    on_llm_error: Literal["fallback", "error"] = "fallback"
    force_refresh: StrictBool = Field(False, description="Skip the cached LLM result, if any.")


class CompressHistoryResponse(ConversationOut):
    format: str
    compressed: bool
    reason: str = Field(description="Why it compressed, or why not (trigger, nothing older).")
    incremental: bool = Field(description="A summary block from an earlier call was updated.")
    mode: str
    degraded: bool
    fallback_reason: str | None
    llm: LLMUsageOut | None
    cache: CacheOut
    stats: StatsOut
    receipt: ReceiptOut
