"""Models every endpoint shares: the conversation in any wire format, stats, receipts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    StrictBool,
    WithJsonSchema,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue, SkipJsonSchema
from pydantic_core import CoreSchema

from app.engine.reading.factscan import MOST_FACTS
from app.engine.transcript.formats import build_formats
from app.service.limits import ListBound
from app.service.llm_call import LLMOptions

# A short support chat, for the examples of the jobs that take a conversation.
EXAMPLE_CHAT: list[Any] = [
    {"role": "system", "content": "You are a support agent."},
    {"role": "user", "content": "Rebook me to Seattle on May 20, economy only."},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {
            "name": "search_flights", "arguments": '{"to": "SEA"}'}}]},
    {"role": "tool", "tool_call_id": "c1", "content": '[{"flight": "HAT069", "price": 121}]'},
    {"role": "assistant", "content": "HAT069 leaves at 06:00 for $121. Book it?"},
    {"role": "user", "content": "Yes, please."},
]


# A conversation's items: objects, as the published schema says. Their shapes are
# checked once, by the wire format's parser, which names the item that is wrong and
# says what it must be; a model of dicts would first copy every message of every
# request (a twentieth of a /synthesize call's time in the service, profiled).
Items = Annotated[list[Any], WithJsonSchema(
    {"type": "array", "items": {"type": "object", "additionalProperties": True},
     "minItems": 1})]


def _format_keys() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The keys the wire formats read: each one's conversation key, and all of them."""
    formats = build_formats().values()
    return (tuple(dict.fromkeys(f.keys[0] for f in formats)),
            tuple(dict.fromkeys(k for f in formats for k in f.keys)))


# The formats own their keys; the fields below are the published names of the same.
CONVERSATION_KEYS, PAYLOAD_KEYS = _format_keys()


def exactly_one_of(json_schema: JsonSchemaValue, handler: GetJsonSchemaHandler,
                   keys: Sequence[str]) -> JsonSchemaValue:
    """Say in the schema that a body sends exactly one of ``keys``: in JSON Schema, so
    that validators and schema-driven fuzzers agree with the service; in the
    description; and as ``x-exactly-one-of``, for tools that read the rule there.

    The JSON Schema is a ``not``: the body is none of "no key given" and "two keys
    given" (a null counts as not given, as the model reads it). It says what a ``oneOf``
    of ``required`` lists says, and client generators leave it alone: they turn a
    ``oneOf`` into a union of one type per branch, and the body's model is lost."""
    target = handler.resolve_ref_schema(json_schema)
    given = {"not": {"type": "null"}}
    none = {"properties": {k: {"type": "null"} for k in keys}}
    pairs = [{"required": [a, b], "properties": {a: given, b: given}}
             for i, a in enumerate(keys) for b in keys[i + 1:]]
    target["not"] = {"anyOf": [none, *pairs]}
    target["x-exactly-one-of"] = list(keys)
    named = ", ".join(f"'{k}'" for k in keys)
    rule = f"Send exactly one of {named}."
    target["description"] = f"{target['description']} {rule}" if target.get("description") \
        else rule
    return json_schema


class Conversation(BaseModel):
    """A transcript under the keys of its wire format: exactly one of three."""

    # A misspelt option must be an error, not silently ignored.
    model_config = ConfigDict(extra="forbid")
    # Counted on the parsed JSON, before the model reads the body (the runner counts
    # the conversation again, as its format reads it, for the requests that come by
    # other ways: the proxy).
    BOUNDS: ClassVar[tuple[ListBound, ...]] = tuple(
        ListBound((key,), "max_messages", "messages",
                  "Send the most recent ones, or compress in parts.")
        for key in CONVERSATION_KEYS)

    @classmethod
    def __get_pydantic_json_schema__(
        cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        # "Exactly one of the three" belongs in the published contract too.
        return exactly_one_of(handler(core_schema), handler, CONVERSATION_KEYS)

    messages: Items | None = Field(
        None, min_length=1, description="OpenAI Chat Completions or Anthropic messages.")
    system: str | list[dict[str, Any]] | None = Field(
        None, description="Anthropic: the top-level system prompt.")
    contents: Items | None = Field(
        None, min_length=1, description="Gemini: the conversation's contents.")
    systemInstruction: dict[str, Any] | None = Field(
        None, description="Gemini: the system instruction (also taken as "
        "system_instruction, the REST API's snake_case spelling, and given back under the "
        "key it came in).")
    # Left out of the published schema: client generators make both spellings one
    # attribute (system_instruction) and then drop the whole model.
    system_instruction: SkipJsonSchema[dict[str, Any] | None] = None
    input: str | list[dict[str, Any]] | None = Field(
        None, description="OpenAI Responses: the input items.")
    instructions: str | None = Field(None, description="OpenAI Responses: the instructions.")
    format: str = Field("auto", description="auto, openai, anthropic, gemini or responses.")

    @model_validator(mode="after")
    def _one_conversation(self) -> Conversation:
        given = [k for k in CONVERSATION_KEYS if getattr(self, k) is not None]
        if len(given) != 1:
            found = f"got {', '.join(given)}" if given else "got none"
            raise ValueError(
                "send the conversation in exactly one of 'messages' (OpenAI, Anthropic), "
                f"'contents' (Gemini) or 'input' (OpenAI Responses); {found}")
        if self.input == [] or self.input == "":
            raise ValueError("'input' is empty; send at least the task")
        if self.systemInstruction is not None and self.system_instruction is not None:
            raise ValueError("send the Gemini system instruction once, as 'systemInstruction' "
                             "or as 'system_instruction'")
        return self

    def payload(self) -> dict[str, Any]:
        """The conversation fields as the caller sent them, for the wire formats."""
        return {k: getattr(self, k) for k in PAYLOAD_KEYS if getattr(self, k) is not None}


# The fields of every job that may call an LLM (which one, and its cache), and what to
# do when the call fails. /synthesize takes the first three under 'reasoning'.
ForceRefresh = Annotated[StrictBool, Field(description="Skip the cached LLM result, if any.")]
OnLLMError = Literal["fallback", "error"]


class _LLMModel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    synthesis_provider: str | None = None
    synthesis_model: str | None = None
    synthesis_temperature: float | None = Field(None, ge=0, le=2)


class LLMChoice(_LLMModel):
    """A job whose LLM errors always surface: nothing can stand in for its answer."""

    force_refresh: ForceRefresh = False

    def llm_options(self) -> LLMOptions:
        return LLMOptions(self.synthesis_provider, self.synthesis_model,
                          self.synthesis_temperature, "error", self.force_refresh)


class LLMFallback(_LLMModel):
    """A job that can run without its LLM: on a failed call it does (the default), or
    answers with the error."""

    on_llm_error: OnLLMError = "fallback"
    force_refresh: ForceRefresh = False

    def llm_options(self) -> LLMOptions:
        return LLMOptions(self.synthesis_provider, self.synthesis_model,
                          self.synthesis_temperature, self.on_llm_error, self.force_refresh)


class ConversationOut(BaseModel):
    """The conversation comes back under the keys it was sent in; the others are absent."""

    messages: list[dict[str, Any]] | None = None
    system: str | list[dict[str, Any]] | None = None
    contents: list[dict[str, Any]] | None = None
    systemInstruction: dict[str, Any] | None = None
    system_instruction: SkipJsonSchema[dict[str, Any] | None] = None  # see Conversation
    input: list[dict[str, Any]] | str | None = None
    instructions: str | None = None


class StatsOut(BaseModel):
    tokens_before: int
    tokens_after: int
    messages_before: int
    messages_after: int
    reduction: float = Field(description="1 - tokens_after / tokens_before.")


class SpanOut(BaseModel):
    handle: str
    kind: Literal["compacted", "summarized", "truncated", "masked"]
    first: int = Field(description="Index of the first input message in the span.")
    last: int
    messages: int
    tools: list[str]


class LostFactsOut(BaseModel):
    total: int
    paths: list[str]
    identifiers: list[str]
    numbers: list[str]
    errors: list[str]
    complete: bool = Field(True, description=(
        "False when the transcript held more candidate facts than a receipt reads "
        f"({MOST_FACTS:,} distinct tokens, and as many error lines, of the dropped text and "
        "of the kept): the lists and the total then cover what was read, so a few lost facts may "
        "be missing and a few kept ones listed. Real agent runs hold a few thousand."))


class ReceiptOut(BaseModel):
    dropped: list[SpanOut]
    lost_facts: LostFactsOut


class CacheOut(BaseModel):
    hit: bool = Field(description="The LLM result came from the cache.")
    key_age_seconds: float | None = Field(description="Age of the cached result on a hit.")


class LLMUsageOut(BaseModel):
    provider: str
    model: str
    input_tokens: int
    output_tokens: int


class Problem(BaseModel):
    """RFC 9457 problem details."""

    type: str
    title: str
    status: int
    detail: str
    instance: str | None = None
    pointer: str | None = None
    errors: list[dict[str, str]] | None = None
    # A rate-limited (429) or too-many-tokens (413) answer says which limit and when; a
    # request over a configured limit (413, limit-exceeded) names its setting.
    limit: str | None = Field(None, description="The tenant's limit that refused the request: "
                              "requests_per_minute, tokens_per_minute or tokens_per_day; or, "
                              "for limit-exceeded, the setting (as its environment variable, "
                              "such as CONTEXTSYNTH_MAX_TRACE_ACTIONS).")
    limit_value: int | None = Field(None, description="That limit's value.")
    retry_after: int | None = Field(None, description="Seconds until the request fits, as in "
                                    "Retry-After.")
    tokens: int | None = Field(None, description="The request's tokens, for a token limit.")


class Health(BaseModel):
    status: str
    checks: dict[str, str] = Field(default_factory=dict)


class ExpandResponse(ConversationOut):
    """The originals in the format of the request that dropped them (or trace actions)."""

    handle: str
    format: str = Field(description="openai, anthropic, gemini, responses or trace.")
    kind: str
    actions: list[dict[str, Any]] | None = Field(None, description="For trace handles.")


# Error responses as documented on every job.
PROBLEMS: dict[int | str, dict[str, Any]] = {
    400: {"model": Problem, "description": "The body is empty, not valid JSON, not UTF-8, "
          "nested deeper than the depth limit, or broken gzip."},
    401: {"model": Problem, "description": "API keys are configured and none valid was sent."},
    404: {"model": Problem, "description": "No such handle for this tenant (or it expired)."},
    408: {"model": Problem, "description": "The body did not arrive within the body timeout."},
    413: {"model": Problem, "description": "The body is over the size limit (after gzip "
          "decoding), or has too many messages (or actions, tool calls, earlier records, "
          "memories), or a message or text over its limit (limit-exceeded, naming the "
          "setting in 'limit'), or more tokens than the tenant's token limit can ever admit "
          "(too-many-tokens)."},
    415: {"model": Problem, "description": "The body is declared as another media type than "
          "JSON, or in an encoding other than gzip."},
    422: {"model": Problem, "description": "The transcript, its format or an option is invalid."},
    429: {"model": Problem, "description": "The tenant's rate limit is reached (rate-limited, "
          "with Retry-After)."},
    500: {"model": Problem, "description": "A strategy broke the output invariants."},
    502: {"model": Problem, "description": "The LLM provider failed (on_llm_error: error)."},
    503: {"model": Problem, "description": "The mode needs an LLM and none is configured, or "
          "calls to the provider are paused after repeated failures (llm-circuit-open, with "
          "Retry-After), or the worker runs as many large requests as its memory holds "
          "(overloaded, with Retry-After)."},
    504: {"model": Problem, "description": "The LLM time budget ran out (on_llm_error: error)."},
}
