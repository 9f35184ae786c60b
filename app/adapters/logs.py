"""Log lines: JSON objects (one per line, for log pipelines) or plain text (for a
terminal), each with the id of the request it belongs to."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

from app.context import request_id

# Fields a record carries besides the standard ones, copied into a JSON line as they are.
FIELDS = ("endpoint", "method", "status", "duration_ms", "tenant", "mode", "tokens_in",
          "tokens_out", "upstream", "upstream_status", "upstream_request_id", "model")


class RequestIdFilter(logging.Filter):
    """Puts the current request's id on every record (``-`` outside a request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id.get() or "-"
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(
                timespec="milliseconds"),
            "level": record.levelname.lower(), "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", None) or request_id.get(),
        }
        line.update({k: getattr(record, k) for k in FIELDS if hasattr(record, k)})
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


_TEXT = "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"


def log_config(fmt: str, level: str) -> dict[str, Any]:
    """A ``logging.config.dictConfig`` for the service and uvicorn: every line through
    one handler on stdout, in ``fmt`` (``json`` or ``text``)."""
    formatter: dict[str, Any] = {"()": JsonFormatter} if fmt == "json" \
        else {"format": _TEXT}
    handler = {"class": "logging.StreamHandler", "stream": "ext://sys.stdout",
               "formatter": "main", "filters": ["request_id"]}
    logger = {"handlers": ["main"], "level": level.upper(), "propagate": False}
    return {
        "version": 1, "disable_existing_loggers": False,
        "filters": {"request_id": {"()": RequestIdFilter}},
        "formatters": {"main": formatter},
        "handlers": {"main": handler},
        "loggers": {name: logger for name in ("app", "uvicorn", "uvicorn.error")},
    }
