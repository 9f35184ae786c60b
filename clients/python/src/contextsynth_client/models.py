"""The requests and answers of the contextsynth API, one model per schema of its
``openapi.yaml``, under the same names.

Requests refuse a field the API does not have, as the service does, so a misspelt
option fails before it is sent. Their numeric limits are left to the service: it
answers a value out of range with a problem document that points at the field, and
its limits can change without a new client. Answers keep a field a newer service
adds (in ``model_extra``) instead of failing on it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

# One message, content item or action, in the shape of its wire format (OpenAI, Anthropic,
# Gemini, OpenAI Responses): the service reads them; the client passes them through.
Item = dict[str, Any]

Tier = Literal["local", "mid", "large", "frontier"]
SynthesisMode = Literal["auto", "fast", "deep", "custom", "off"]
AgentStrategy = Literal["reactive", "planExecute", "treeOfThought", "reflexion", "adaptive"]
JobMode = Literal["auto", "fast", "deep"]
ReflectMode = Literal["auto", "deep", "fast"]
RecallMode = Literal["auto", "deep", "extractive"]
OnLLMError = Literal["fallback", "error"]
ActionOutcome = Literal["success", "error", "failure", "timeout"]
CallOutcome = Literal["success", "error", "failure", "timeout"]
Progress = Literal["advancing", "stuck", "regressing"]


def _gemini_system() -> Any:
    """Gemini's system instruction: ``systemInstruction`` on the wire (the REST API's
    snake_case spelling is read too), ``system_instruction`` in Python."""
    return Field(None, validation_alias=AliasChoices("systemInstruction", "system_instruction"),
                 serialization_alias="systemInstruction")


class Request(BaseModel):
    """A request body. Only the fields given are sent, so the service's own defaults
    apply to the rest."""

    model_config = ConfigDict(extra="forbid")


class Answer(BaseModel):
    """An answer of the service."""

    model_config = ConfigDict(extra="allow")


# --- requests ---------------------------------------------------------------------------


class _Conversation(Request):
    """A transcript under the keys of its wire format: send exactly one of 'messages'
    (OpenAI Chat Completions, Anthropic), 'contents' (Gemini) or 'input' (OpenAI
    Responses)."""

    messages: list[Item] | None = None
    system: str | list[Item] | None = None
    contents: list[Item] | None = None
    system_instruction: Item | None = _gemini_system()
    input: str | list[Item] | None = None
    instructions: str | None = None
    format: str = "auto"


class _LLMChoice(Request):
    synthesis_provider: str | None = None
    synthesis_model: str | None = None
    synthesis_temperature: float | None = None
    force_refresh: bool = False


class _LLMFallback(_LLMChoice):
    on_llm_error: OnLLMError = "fallback"


class ReasoningBundle(Request):
    synthesis: SynthesisMode | None = None
    synthesis_model: str | None = None
    synthesis_provider: str | None = None
    synthesis_temperature: float | None = None
    synthesis_strategy: str | None = None


class Reasoning(ReasoningBundle):
    strategies: dict[AgentStrategy, ReasoningBundle] = Field(default_factory=dict)


class SynthesizeRequest(_Conversation):
    model: str | None = None
    tier: Tier | None = None
    task: str | None = None
    iteration: int | None = None
    max_iterations: int | None = None
    required_tools: list[str] = Field(default_factory=list)
    output_tools: list[str] | None = None
    strategy: AgentStrategy = "reactive"
    reasoning: Reasoning = Field(default_factory=Reasoning)
    steer: bool = True
    on_llm_error: OnLLMError = "fallback"
    force_refresh: bool = False
    cache_breakpoints: bool = False
    budget_tokens: int | None = None
    trigger_tokens: int | None = None


class CompressHistoryRequest(_Conversation, _LLMFallback):
    trigger_messages: int | None = None
    trigger_tokens: int | None = None
    trigger_share: float | None = None
    model: str | None = None
    context_window: int | None = None
    keep_last_n: int | None = None
    mode: JobMode = "auto"
    budget_tokens: int | None = None


class ActionIn(Request):
    action: str
    action_input: str | dict[str, Any] | list[Any] = ""
    observation: str = ""
    outcome: ActionOutcome | None = None
    thought: str | None = None


class SummarizeTraceRequest(_LLMFallback):
    """Send exactly one of 'actions' and 'scratchpad'."""

    actions: list[ActionIn] | None = None
    scratchpad: str | None = None
    trigger: int | None = None
    keep: int | None = None
    observation_chars: int | None = None
    large_chars: int | None = None
    large_trigger: int | None = None
    large_keep: int | None = None
    min_llm_chars: int | None = None
    min_saving: float | None = None
    mode: JobMode = "auto"
    budget_tokens: int | None = None


class RescueRequest(_Conversation, _LLMFallback):
    question: str
    max_steps: int | None = None
    dry_run: bool = False
    budget_tokens: int | None = None


class MemoryIn(Request):
    id: str
    text: str
    score: float | None = None
    layer: str | None = None


class SummarizeRecallRequest(_LLMFallback):
    query: str
    memories: list[MemoryIn]
    k: int = 10
    max_tokens: int = 500
    include_citations: bool = True
    mode: RecallMode = "auto"


class CallIn(Request):
    tool: str
    params: dict[str, Any] | str = Field(default_factory=dict)
    output: str = ""
    outcome: CallOutcome | None = None
    duration_ms: float | None = None
    cost: float | dict[str, float] | None = None
    timestamp: datetime | None = None
    rationale: str | None = None


class PastCallIn(CallIn):
    """A call of an earlier iteration; the fields a record adds to it are dropped."""

    model_config = ConfigDict(extra="ignore")


class PastIn(Request):
    """An earlier iteration, for ``ReflectRequest.history``."""

    model_config = ConfigDict(extra="ignore")

    iteration: int | None = None
    progress_assessment: Progress | None = None
    calls: list[PastCallIn] = Field(default_factory=list)

    @classmethod
    def from_record(cls, record: RecordOut) -> PastIn:
        """The record of an earlier ``/reflect`` answer, as the next call's history."""
        return cls.model_validate(record.model_dump(mode="json"))


class ReflectRequest(_LLMFallback):
    goal: str
    iteration: int | None = None
    tool_calls: list[CallIn]
    history: list[PastIn] = Field(default_factory=list)
    mode: ReflectMode = "auto"
    timestamp: datetime | None = None
    user_feedback: str | None = None
    context_tokens: int = 400


# --- the parts answers share ------------------------------------------------------------


class CacheOut(Answer):
    hit: bool
    key_age_seconds: float | None


class LLMUsageOut(Answer):
    provider: str
    model: str
    input_tokens: int
    output_tokens: int


class StatsOut(Answer):
    tokens_before: int
    tokens_after: int
    messages_before: int
    messages_after: int
    reduction: float


class SpanOut(Answer):
    """A run of input messages (or actions) a compaction replaced; ``handle`` reads them
    back with ``expand``."""

    handle: str
    kind: str
    first: int
    last: int
    messages: int
    tools: list[str]


class LostFactsOut(Answer):
    total: int
    paths: list[str]
    identifiers: list[str]
    numbers: list[str]
    errors: list[str]
    complete: bool = True


class ReceiptOut(Answer):
    dropped: list[SpanOut]
    lost_facts: LostFactsOut


class _ConversationOut(Answer):
    """The compacted conversation, under the keys the request used; the others are None."""

    messages: list[Item] | None = None
    system: str | list[Item] | None = None
    contents: list[Item] | None = None
    system_instruction: Item | None = _gemini_system()
    input: list[Item] | str | None = None
    instructions: str | None = None


# --- answers ----------------------------------------------------------------------------


class ResolvedField(Answer):
    value: Any
    source: str


class BreakpointOut(Answer):
    message: int
    block: int


class PrefixOut(Answer):
    stable_messages: int
    stable_tokens: int
    steady_messages: int
    steady_tokens: int
    cache_breakpoints: list[BreakpointOut]


class SignalsOut(Answer):
    iteration: int
    max_iterations: int | None
    task: str | None
    tools_called: dict[str, int]
    required_missing: list[str]
    required_failed: list[str]
    outputs_done: list[str]
    recent_errors: list[str]


class SynthesizeResponse(_ConversationOut):
    format: str
    compacted: bool
    mode: str
    requested_mode: str
    mode_reason: str
    degraded: bool
    fallback_reason: str | None
    llm: LLMUsageOut | None
    phase: str
    nudge: str | None
    tier: str
    tier_source: str
    signals: SignalsOut
    stats: StatsOut
    receipt: ReceiptOut
    cache: CacheOut
    prefix: PrefixOut
    resolved_config: dict[str, ResolvedField]


class CompressHistoryResponse(_ConversationOut):
    format: str
    compressed: bool
    reason: str
    incremental: bool
    mode: str
    degraded: bool
    fallback_reason: str | None
    llm: LLMUsageOut | None
    cache: CacheOut
    stats: StatsOut
    receipt: ReceiptOut


class GroupOut(Answer):
    tool: str
    calls: int
    summary: str
    paths: list[str]
    errors: list[str]


class TraceStatsOut(Answer):
    chars_before: int
    chars_after: int
    tokens_before: int
    tokens_after: int
    reduction: float
    actions_total: int
    actions_summarized: int


class SummarizeTraceResponse(Answer):
    scratchpad: str
    strategy: str
    reason: str
    mode: str
    degraded: bool
    fallback_reason: str | None
    llm: LLMUsageOut | None
    cache: CacheOut
    groups: list[GroupOut]
    recent: list[Item]
    receipt: ReceiptOut
    stats: TraceStatsOut


class PromptMessageOut(Answer):
    role: str
    content: str


class EvidenceOut(Answer):
    steps: int
    chars: int
    compacted: bool
    tokens: int | None = None


class RescueResponse(Answer):
    answer: str | None
    dry_run: bool
    prompt: list[PromptMessageOut] | None
    evidence: EvidenceOut
    degraded: bool
    degraded_reason: str | None
    llm: LLMUsageOut | None
    cache: CacheOut


class CitationOut(Answer):
    memory_id: str
    snippet: str
    score: float | None
    layer: str | None


class SummarizeRecallResponse(Answer):
    summary: str
    refused: bool
    citations: list[CitationOut]
    sources_used: list[str]
    removed_citations: list[str]
    removed_claims: list[str] = Field(default_factory=list)
    flagged_claims: list[str] = Field(default_factory=list)
    memories_considered: list[str]
    mode: str
    degraded: bool
    fallback_reason: str | None
    cache_hit: bool
    cache: CacheOut
    llm: LLMUsageOut | None


class EnrichedCallOut(Answer):
    tool: str
    params: dict[str, Any] | str
    output: str
    outcome: str
    duration_ms: float | None
    cost: float | None
    timestamp: datetime | None
    rationale: str | None
    insights: list[str]
    learning: str
    relevance: str
    next_suggested_actions: list[str]


class RecordOut(Answer):
    iteration: int | None
    goal: str
    timestamp: datetime | None
    mode: str
    user_feedback: str | None
    calls: list[EnrichedCallOut]
    synthesis: str
    progress_assessment: str


class ReflectResponse(Answer):
    record: RecordOut
    reasoning_context: str
    stuck: bool
    stuck_reason: str | None
    recovery_prompt: str | None
    mode: str
    degraded: bool
    fallback_reason: str | None
    cache: CacheOut
    llm: LLMUsageOut | None


class ExpandResponse(_ConversationOut):
    """The originals a compaction replaced, in the format of the request that dropped
    them; a trace's handle gives ``actions`` instead."""

    handle: str
    format: str
    kind: str
    actions: list[Item] | None = None


class Health(Answer):
    status: str
    checks: dict[str, str] = Field(default_factory=dict)


class Problem(Answer):
    """An RFC 9457 problem document. Members beyond these (``request_id``,
    ``errors_omitted``, ``reference``...) are in ``model_extra``."""

    type: str
    title: str
    status: int
    detail: str
    instance: str | None = None
    pointer: str | None = None
    errors: list[dict[str, str]] | None = None
    # A 429 (rate-limited) or a 413 (too-many-tokens): which of the tenant's limits, its
    # value, the seconds until the request fits, and the request's tokens.
    limit: str | None = None
    limit_value: int | None = None
    retry_after: int | None = None
    tokens: int | None = None


# --- not in openapi.yaml: proxy mode ----------------------------------------------------


class ProxyReceipt(Answer):
    """What a request sent through proxy mode dropped: ``GET
    /v1/contextsynth/receipts/{id}``, with the id from its ``x-contextsynth-receipt`` or
    ``x-contextsynth-request-id`` header. Proxy routes are left out of ``openapi.yaml``
    (their bodies are the providers'), so this model follows the service's README."""

    request_id: str
    receipt_id: str
    mode: str
    tokens_before: int
    tokens_after: int
    stable_messages: int
    receipt: ReceiptOut
    expanded: list[str] = Field(default_factory=list)
