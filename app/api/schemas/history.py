"""``/compress-history`` request and response."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from app.api.schemas.common import (
    EXAMPLE_CHAT,
    CacheOut,
    Conversation,
    ConversationOut,
    LLMFallback,
    LLMUsageOut,
    ReceiptOut,
    StatsOut,
)
from app.engine.jobs.base import LLMJobMode
from app.engine.jobs.history.compressor import HistoryOptions
from app.engine.jobs.history.plan import HistoryRequest
from app.engine.jobs.history.windows import share_of_window
from app.settings import Settings


class _HistoryFields(Conversation):

    trigger_messages: int | None = Field(
        None, ge=1, description="Compress above this many messages (default from settings, 50).")
    trigger_tokens: int | None = Field(
        None, ge=1, description="Also compress above this many tokens.")
    trigger_share: float | None = Field(
        None, gt=0, le=1, description="Also compress above this share of the model's context "
        "window (0.75: three quarters); needs a 'model' that LiteLLM's model map lists, or "
        "'context_window'.")
    model: str | None = Field(None, description="The model the history is for, e.g. gpt-4o; "
                              "used with 'trigger_share'.")
    context_window: int | None = Field(
        None, ge=1, description="The model's context window in tokens, when 'model' is not "
        "enough to know it.")
    keep_last_n: int | None = Field(
        None, ge=0, description="Messages kept verbatim at the end (default 10).")
    mode: LLMJobMode = Field(
        "auto", description="deep: LLM summary; fast: deterministic extraction; auto: deep "
        "when an LLM is configured.")
    budget_tokens: int | None = Field(
        None, ge=1, description="The most tokens the output may have: above it the history "
        "is compressed whatever the triggers say, and when the summary and the last "
        "messages would pass it, fewer of the last messages are kept (a tool call never "
        "parted from its result). 422 when the system prompt, the task, the user's "
        "messages and the summary alone are past it.")


# The LLM fields come last in the published schema, as they always have.
class CompressHistoryRequest(LLMFallback, _HistoryFields):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{
        "messages": EXAMPLE_CHAT, "trigger_messages": 4, "keep_last_n": 2, "mode": "fast"}]})

    def to_job(self, settings: Settings) -> HistoryRequest:
        return HistoryRequest(self.payload(), self.format, HistoryOptions(
            trigger_messages=self.trigger_messages or settings.history_trigger_messages,
            trigger_tokens=self._token_trigger(),
            keep_last_n=(self.keep_last_n if self.keep_last_n is not None
                         else settings.history_keep_last_n),
            budget_tokens=self.budget_tokens), self.mode)

    def _token_trigger(self) -> int | None:
        """The lower of the token trigger and the share of the window, whichever are given."""
        limits = [self.trigger_tokens] if self.trigger_tokens is not None else []
        if self.trigger_share is not None:
            limits.append(share_of_window(self.trigger_share, self.model, self.context_window))
        return min(limits, default=None)


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
