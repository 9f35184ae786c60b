"""What the code serving a request may need to know of it, without passing it down."""

from __future__ import annotations

from contextvars import ContextVar

# The id of the request being served (``X-Request-ID``), for problems and events.
request_id: ContextVar[str | None] = ContextVar("request_id", default=None)
