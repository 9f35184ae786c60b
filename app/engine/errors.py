"""Every error a caller is told of, in one module: the engine's own (a transcript it
cannot read, an option it does not know) and those of the service and adapters around
it (a missing key, an upstream that failed, a store that is down), which raise them
from here so that no layer imports the one above it. ``api.errors`` maps each class to
a status and a problem document, in one table."""

from __future__ import annotations


class ContextsynthError(Exception):
    """Base of every error the service reports to a caller.

    ``slug`` names the problem type; ``title`` is its short, stable summary;
    ``detail`` says what was wrong with this request and how to fix it;
    ``pointer`` (a JSON Pointer into the request body) says where.
    """

    slug = "error"
    title = "Request failed"

    def __init__(self, detail: str, *, pointer: str | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.pointer = pointer


class InvalidTranscript(ContextsynthError):
    slug = "invalid-transcript"
    title = "The transcript is not valid for its wire format"


class UnknownFormat(ContextsynthError):
    slug = "unknown-format"
    title = "Unknown wire format"


class AmbiguousFormat(ContextsynthError):
    slug = "ambiguous-format"
    title = "The payload mixes wire formats"


class InvalidOption(ContextsynthError):
    slug = "invalid-option"
    title = "An option has a value the service cannot use"


class UnknownStrategy(ContextsynthError):
    slug = "unknown-strategy"
    title = "Unknown synthesis strategy"


class StrategyFailed(ContextsynthError):
    slug = "strategy-failed"
    title = "A synthesis strategy produced an invalid transcript"


class InvalidNumber(ContextsynthError):
    slug = "invalid-number"
    title = "A number in the request is not finite"


class MalformedBody(ContextsynthError):
    """The body cannot be read as JSON at all."""

    slug = "malformed-json"
    title = "The request body is not valid JSON"


class NotUTF8(MalformedBody):
    slug = "invalid-utf8"
    title = "The request body is not UTF-8"


class NestedTooDeep(MalformedBody):
    slug = "nested-too-deep"
    title = "The request body nests too deep"

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"lists and objects in the body nest more than {limit} levels deep; this "
            f"service reads at most {limit} (CONTEXTSYNTH_MAX_JSON_DEPTH). A transcript "
            "nests a handful of levels: send tool results and arguments as strings.")
        self.limit = limit


class LimitExceeded(ContextsynthError):
    slug = "limit-exceeded"
    title = "The request is over a configured limit"


class LLMNotConfigured(ContextsynthError):
    slug = "llm-not-configured"
    title = "No LLM provider is configured"


class Unauthorized(ContextsynthError):
    slug = "unauthorized"
    title = "A valid API key is required"


class TryAgain(ContextsynthError):
    """Nothing was wrong with the request: the same one may succeed after
    ``retry_after`` seconds (its answer says so in Retry-After)."""

    def __init__(self, detail: str, *, retry_after: float,
                 pointer: str | None = None) -> None:
        super().__init__(detail, pointer=pointer)
        self.retry_after = retry_after


class HandlesUnavailable(TryAgain):
    slug = "handles-unavailable"
    title = "The store of expand handles cannot be reached"

    def __init__(self, detail: str, *, retry_after: float) -> None:
        super().__init__(detail, retry_after=retry_after, pointer="/handle")


class HandleNotFound(ContextsynthError):
    slug = "handle-not-found"
    title = "No such expand handle"


class UpstreamFailed(ContextsynthError):
    """``upstream``: the provider the call was for, whose error shape its caller's SDK
    reads (None: answer as a problem document). ``detail`` goes to the caller: where the
    upstream is stays in the operator's log."""

    slug = "upstream-failed"
    title = "The upstream provider could not be reached"

    def __init__(self, detail: str, *, upstream: str | None = None) -> None:
        super().__init__(detail)
        self.upstream = upstream


class UpstreamTimeout(UpstreamFailed):
    slug = "upstream-timeout"
    title = "The upstream provider did not answer in time"


class UpstreamBusy(TryAgain):
    """Every upstream connection of this worker is in use and the queue is full, or the
    wait ran out: the request was not sent, so the caller may retry it as it is."""

    slug = "proxy-busy"
    title = "The proxy has no free upstream connection"

    def __init__(self, detail: str, *, upstream: str, retry_after: float) -> None:
        super().__init__(detail, retry_after=retry_after)
        self.upstream = upstream


class Overloaded(TryAgain):
    """As many large requests as this worker's memory allows are running."""

    slug = "overloaded"
    title = "The service is busy with large requests"


class BudgetTooSmall(ContextsynthError):
    """What must stay (the system prompt, the task, the newest user message) alone is past
    the token budget: no compaction can fit it."""

    slug = "budget-too-small"
    title = "The token budget is smaller than what must be kept"
