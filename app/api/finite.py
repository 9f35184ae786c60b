"""Parse JSON bodies once, fast, and refuse numbers that are not finite (NaN,
Infinity, 1e999).

Python's JSON parser accepts ``NaN`` and ``Infinity`` and reads ``1e999`` as
infinity, but they are not JSON: a caller that sends them gets a 422 that
names the field, before any model or job sees the value (the response, which
is strict JSON, could otherwise not be written).

Bodies are parsed with orjson (``adapters.jsoncodec``), three times faster than the
standard parser, and strict: it refuses every non-finite number. Its result is what
the route reads. Only a body orjson refuses (or that holds an integer too long for it
to keep exact) is read again by the standard parser, which finds the bad number or
reports the syntax error as before. A body that resends an earlier body's messages is
parsed only past them (``adapters.resends``), with the same result.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute

from app.adapters import jsoncodec
from app.adapters.resends import Resends
from app.api.deps import Services
from app.engine.errors import InvalidNumber

# An exponent of three digits or more is the only way a finite-looking number overflows.
_SUSPECT = re.compile(rb"NaN|Infinity|[eE][+]?\d{3,}")


class _NonFinite:
    def __init__(self, text: str) -> None:
        self.text = text


def _float(text: str) -> float | _NonFinite:
    value = float(text)
    return value if math.isfinite(value) else _NonFinite(text)


def _find(value: Any, path: str) -> tuple[str, str] | None:
    if isinstance(value, _NonFinite):
        return path or "/", value.text
    items: Any = value.items() if isinstance(value, dict) else \
        enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        step = str(key).replace("~", "~0").replace("/", "~1")
        found = _find(item, f"{path}/{step}")
        if found is not None:
            return found
    return None


def check_finite(body: bytes) -> None:
    """Raise :class:`InvalidNumber` at the first number of ``body`` that is not finite."""
    if not _SUSPECT.search(body):
        return
    try:
        parsed = json.loads(body, parse_constant=_NonFinite, parse_float=_float)
    except ValueError:
        return  # not JSON at all: the normal parse reports it
    found = _find(parsed, "")
    if found is not None:
        pointer, text = found
        raise InvalidNumber(f"{pointer} is {text}, which is not a finite number; JSON has no "
                            "NaN or Infinity. Send a finite number, or leave the field out.",
                            pointer=pointer)


def _bodies(request: Request) -> Resends:
    # The parser create_app built: it remembers this process's recent bodies.
    svc: Services = request.app.state.services
    return svc.bodies


class FiniteJSONRoute(APIRoute):
    """An APIRoute whose JSON bodies must hold finite numbers only."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = self.inner_handler()

        async def checked(request: Request) -> Response:
            if request.method in ("POST", "PUT", "PATCH"):
                body = await request.body()  # cached: the handler reads it again
                parsed = _bodies(request).loads(body)
                if isinstance(parsed, jsoncodec.Unread):
                    check_finite(body)
                else:
                    # Starlette's own cache of request.json(), which FastAPI reads the
                    # body through: the body is parsed once, by orjson.
                    request._json = parsed
            return await handler(request)

        return checked

    def inner_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        """What serves the request once its numbers are checked."""
        return super().get_route_handler()
