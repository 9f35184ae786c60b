"""``/reflect`` request and response."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AliasChoices, BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema

from app.api.schemas.common import CacheOut, LLMFallback, LLMUsageOut
from app.engine.jobs.reflect.plan import ReflectJobRequest, ReflectMode
from app.engine.jobs.reflect.reflector import CONTEXT_TOKENS, Call, PastIteration
from app.service.limits import ListBound

_WHEN = "When it ran: ISO 8601 (2026-11-26T07:30:00Z) or seconds since the epoch."


Outcome = Literal["success", "error", "failure", "timeout"]


def _when(value: Any) -> Any:
    """The two spellings the schema publishes, and no other: pydantic alone would read
    0 as 1970 (an agent's unset clock, which then orders every call wrongly), a boolean
    as a number and a string of digits as seconds."""
    if isinstance(value, bool):
        raise ValueError("a timestamp is an ISO 8601 string or seconds since the epoch, "
                         "not a boolean")
    if isinstance(value, int | float) and not value > 0:
        raise ValueError("seconds since the epoch must be more than 0; leave the timestamp "
                         "out (or null) when the time is not known")
    if isinstance(value, str) and value.strip().lstrip("+-").replace(".", "", 1).isdigit():
        raise ValueError("seconds since the epoch go as a JSON number, not a string")
    return value


# An ISO 8601 string, or a number of seconds since the epoch past zero.
When = Annotated[datetime, BeforeValidator(_when), WithJsonSchema({"anyOf": [
    {"type": "string", "format": "date-time"}, {"type": "number", "exclusiveMinimum": 0}]})]


class CallIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tool: str = Field(min_length=1)
    params: dict[str, Any] | str = Field(default_factory=dict)
    # The seeds' names (raw_output, execution_time, tool_selection_rationale) are taken
    # too, so a caller written from them works unchanged.
    output: str = Field("", description="The raw output (also taken as raw_output).",
                        validation_alias=AliasChoices("output", "raw_output"))
    outcome: Outcome | None = Field(
        None, description="How the call ended; error, failure and timeout are failures, "
        "kept apart in the record.")
    duration_ms: float | None = Field(
        None, ge=0, description="How long the call took, in milliseconds (also taken as "
        "execution_time).", validation_alias=AliasChoices("duration_ms", "execution_time"))
    cost: float | dict[str, float] | None = Field(
        None, description="A number, or an object of numbers ({\"usd\": 0.002, "
        "\"tokens\": 812}): its usd, total or amount is the call's cost.")
    timestamp: When | None = Field(None, description=_WHEN)
    rationale: str | None = Field(
        None, max_length=10_000, description="Why the agent made the call, in its words; "
        "deep mode reads it (also taken as tool_selection_rationale).",
        validation_alias=AliasChoices("rationale", "tool_selection_rationale"))

    def to_call(self) -> Call:
        params = self.params if isinstance(self.params, str) else json.dumps(
            self.params, ensure_ascii=False, sort_keys=True)
        return Call(self.tool, params, self.output, self.outcome, self.duration_ms,
                    _cost(self.cost), self.rationale)


# The fields a cost object names its amount by, in the order they are read.
_COST_FIELDS = ("usd", "total", "amount")


def _cost(value: float | dict[str, float] | None) -> float | None:
    if not isinstance(value, dict):
        return value
    return next((float(value[k]) for k in _COST_FIELDS if k in value), None)


class PastCallIn(CallIn):
    """A call of an earlier record; its enrichment fields are accepted and ignored."""

    model_config = ConfigDict(extra="ignore")


class PastIn(BaseModel):
    """An earlier iteration: the 'record' of an earlier /reflect answer fits here."""

    model_config = ConfigDict(extra="ignore")

    iteration: int | None = None
    progress_assessment: Literal["advancing", "stuck", "regressing"] | None = None
    calls: list[PastCallIn] = Field(
        default_factory=list, description="At most CONTEXTSYNTH_MAX_REFLECT_CALLS (1000 by "
        "default).")


class ReflectRequest(LLMFallback):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{
        "goal": "Find why test_parse fails",
        "iteration": 3,
        "tool_calls": [{"tool": "bash", "params": {"command": "pytest -x"},
                        "output": "FAILED test_parse - ValueError: bad month"}],
        "mode": "fast"}]})
    # Counted on the parsed JSON, before the model reads a single call; the outer lists
    # first, so the records are walked only when there are not too many of them.
    BOUNDS: ClassVar[tuple[ListBound, ...]] = (
        ListBound(("tool_calls",), "max_reflect_calls", "tool calls",
                  "Reflect on the iteration in parts."),
        ListBound(("history",), "max_reflect_history", "earlier records",
                  "Send the most recent ones."),
        ListBound(("history", "*", "calls"), "max_reflect_calls", "tool calls",
                  "Send fewer of the record's calls, or fewer records."),
        ListBound(("history", "*", "calls"), "max_reflect_history_calls", "tool calls",
                  "Send fewer, or more recent, earlier records.", total=True),
    )

    goal: str = Field(min_length=1)
    iteration: int | None = Field(None, ge=0)
    # One iteration's calls: a handful, and every one is read, enriched and answered.
    tool_calls: list[CallIn] = Field(
        min_length=1, description="At most CONTEXTSYNTH_MAX_REFLECT_CALLS (1000 by default).")
    history: list[PastIn] = Field(
        default_factory=list, description="Earlier records: at most "
        "CONTEXTSYNTH_MAX_REFLECT_HISTORY (100 by default), with at most "
        "CONTEXTSYNTH_MAX_REFLECT_HISTORY_CALLS calls (10,000 by default) in all.")
    mode: ReflectMode = "auto"
    timestamp: When | None = Field(None, description=_WHEN.replace("it ran", "the "
                                   "iteration ran"))
    user_feedback: str | None = Field(
        None, max_length=10_000, description="What the user said of the agent's work: the "
        "first line of the reasoning context, and read by deep mode.")
    context_tokens: int = Field(CONTEXT_TOKENS, ge=50, le=8_000, description="Most tokens "
                                "of reasoning_context; calls past it are counted, not shown.")

    def to_job(self) -> ReflectJobRequest:
        return ReflectJobRequest(
            self.goal, tuple(c.to_call() for c in self.tool_calls),
            tuple(PastIteration(p.progress_assessment, tuple(c.to_call() for c in p.calls))
                  for p in self.history), self.mode, self.iteration, self.user_feedback,
            self.context_tokens)


class EnrichedCallOut(BaseModel):
    tool: str
    params: dict[str, Any] | str
    output: str = Field(description="Kept to about 1000 characters, for debugging.")
    outcome: Outcome = Field(description="As the caller said, else success or error as "
                             "read from the output.")
    duration_ms: float | None
    cost: float | None
    timestamp: datetime | None
    rationale: str | None
    insights: list[str]
    learning: str
    relevance: Literal["high", "medium", "low"]
    next_suggested_actions: list[str]


class RecordOut(BaseModel):
    iteration: int | None
    goal: str
    timestamp: datetime | None
    mode: Literal["fast", "deep"] = Field(description="How the record was made.")
    user_feedback: str | None
    calls: list[EnrichedCallOut]
    synthesis: str
    progress_assessment: Literal["advancing", "stuck", "regressing"]


class ReflectResponse(BaseModel):
    record: RecordOut
    reasoning_context: str = Field(
        description="Layer 2: the user's feedback, then a line of insights per call, most "
        "relevant first, within context_tokens.")
    stuck: bool
    stuck_reason: str | None
    recovery_prompt: str | None
    mode: str
    degraded: bool
    fallback_reason: str | None
    cache: CacheOut
    llm: LLMUsageOut | None
