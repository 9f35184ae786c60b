"""What the client raises. Every error answer of the service is an RFC 9457 problem
document; it comes back as an ``APIError`` (or the subclass for its status) that
carries the whole document. Network failures and timeouts are httpx's own exceptions
(``httpx.TransportError``), raised as they are."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import httpx
from pydantic import ValidationError

from contextsynth_client.models import Problem

# A body that is not a problem document (a proxy's HTML page in front of the service) is
# quoted in the detail up to this many characters.
QUOTED_CHARS = 500


class ContextsynthError(Exception):
    """The base of every error this client raises."""


class APIError(ContextsynthError):
    """The service answered with an error status and this problem document."""

    def __init__(self, problem: Problem, *, retry_after: float | None = None) -> None:
        super().__init__(f"{problem.status} {problem.title}: {problem.detail}")
        self.problem = problem
        # Seconds the service asked to wait before trying again (Retry-After), if it did.
        self.retry_after = retry_after

    @property
    def status(self) -> int:
        return self.problem.status

    @property
    def type(self) -> str:
        return self.problem.type

    @property
    def title(self) -> str:
        return self.problem.title

    @property
    def detail(self) -> str:
        return self.problem.detail

    @property
    def pointer(self) -> str | None:
        """Where in the request the fault is, as a JSON pointer (``/messages/3``)."""
        return self.problem.pointer

    @property
    def extensions(self) -> dict[str, Any]:
        """The document's members beyond the ones RFC 9457 and the spec name."""
        return dict(self.problem.model_extra or {})

    @property
    def request_id(self) -> str | None:
        """The service's id for the request, to find it in the service's logs."""
        found = self.extensions.get("request_id")
        return found if isinstance(found, str) else None


class BadRequest(APIError):
    """400: the body is not JSON, not UTF-8, nested too deep, or broken gzip."""


class Unauthorized(APIError):
    """401: the service has API keys and none valid was sent."""


class NotFound(APIError):
    """404: no such handle or receipt for this tenant (or it expired), or no such path."""


class PayloadTooLarge(APIError):
    """413: the body, a message or a list is over the service's limit."""


class InvalidRequest(APIError):
    """422: the transcript, its format or an option is not valid; ``pointer`` and the
    document's ``errors`` say where."""


class RateLimited(APIError):
    """429: too many requests; ``retry_after`` says when to come back."""


class ServerError(APIError):
    """A 5xx answer: the service or the LLM provider behind it failed."""


class ServiceUnavailable(ServerError):
    """503: no LLM configured for the mode asked, calls to the provider paused, or the
    service full; ``retry_after`` says when to try again, when it can help."""


class UnexpectedResponse(ContextsynthError):
    """A success status whose body does not match the answer's model: a service of
    another version, or something else answering at the base URL."""

    def __init__(self, message: str, response: httpx.Response) -> None:
        super().__init__(message)
        self.response = response


# The exception for each status; another 5xx is a ServerError, another 4xx an APIError.
ERRORS: dict[int, type[APIError]] = {
    400: BadRequest,
    401: Unauthorized,
    404: NotFound,
    413: PayloadTooLarge,
    422: InvalidRequest,
    429: RateLimited,
    503: ServiceUnavailable,
}


def error_for(response: httpx.Response, retry_after: float | None = None) -> APIError:
    """The exception for an error answer, with its problem document."""
    status = response.status_code
    kind = ERRORS.get(status, ServerError if status >= 500 else APIError)
    return kind(problem_of(response), retry_after=retry_after)


def problem_of(response: httpx.Response) -> Problem:
    """The answer's problem document. RFC 9457 makes every member optional: missing ones
    get its defaults, and a body that is no problem document at all becomes one of type
    about:blank that quotes it."""
    status = response.status_code
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = response.reason_phrase or "Error"
    defaults: dict[str, Any] = {"type": "about:blank", "title": phrase, "status": status,
                                "detail": ""}
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        try:
            return Problem.model_validate({**defaults, **body})
        except ValidationError:
            pass
    text = response.text.strip()
    quoted = text[:QUOTED_CHARS] + ("..." if len(text) > QUOTED_CHARS else "")
    return Problem.model_validate({**defaults, "detail": quoted or phrase})
