"""Parse JSON bodies once, fast, and refuse what is not JSON a job can hold: numbers
that are not finite (NaN, Infinity, 1e999) or too long to convert, text that is not
UTF-8, and nesting past ``max_json_depth`` (every walker of a transcript recurses once
per level; a body nested 100,000 deep would end in a RecursionError, a 500).

Python's JSON parser accepts ``NaN`` and ``Infinity`` and reads ``1e999`` as
infinity, but they are not JSON: a caller that sends them gets a 422 that
names the field, before any model or job sees the value (the response, which
is strict JSON, could otherwise not be written).

Bodies are parsed with orjson (``adapters.jsoncodec``), three times faster than the
standard parser, and strict: it refuses every non-finite number. Its result is what
the route reads. Only a body orjson refuses (or that holds an integer too long for it
to keep exact) is read again by the standard parser (``read_strictly``), which names
what is wrong: each failure is a problem document, a 400 or a 422, never a 500. A
body that resends an earlier body's messages is parsed only past them
(``adapters.resends``), with the same result.
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
from app.adapters.jsoncodec import check_depth
from app.adapters.resends import Resends
from app.api.deps import Services
from app.engine.errors import InvalidNumber, MalformedBody, NestedTooDeep, NotUTF8
from app.service.limits import CONVERSATION_KEYS, ListBound, check_bounds, check_texts

# An exponent of three digits or more is the only way a finite-looking number overflows.
_SUSPECT = re.compile(rb"NaN|Infinity|[eE][+]?\d{3,}")
# Python converts integers of at most this many digits (sys.get_int_max_str_digits).
_INT_DIGITS = 4300
_LONG_DIGITS = re.compile(rb"\d{%d}" % (_INT_DIGITS + 1))


class _NonFinite:
    def __init__(self, text: str) -> None:
        self.text = text


class _LongInteger(_NonFinite):
    """An integer with more digits than Python converts (4,300): no model or job needs
    one, and converting it is what the limit protects against."""


def _float(text: str) -> float | _NonFinite:
    value = float(text)
    return value if math.isfinite(value) else _NonFinite(text)


def _int(text: str) -> int | _NonFinite:
    return int(text) if len(text.lstrip("-")) <= _INT_DIGITS else _LongInteger(text)


def _find(value: Any, path: str) -> tuple[str, _NonFinite] | None:
    if isinstance(value, _NonFinite):
        return path or "/", value
    items: Any = value.items() if isinstance(value, dict) else \
        enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        step = str(key).replace("~", "~0").replace("/", "~1")
        found = _find(item, f"{path}/{step}")
        if found is not None:
            return found
    return None


def read_strictly(body: bytes, max_depth: int) -> Any:
    """A body orjson refused (or would have changed), read by the standard parser with
    every way it can fail named: not UTF-8, not JSON, too deep, a number that is not
    finite or too long. Never a RecursionError or a bare ValueError."""
    try:
        # A byte order mark is tolerated, as the standard parser does on bytes.
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise NotUTF8(
            f"byte {exc.start} of the body (0x{body[exc.start]:02x}) is not part of a UTF-8 "
            "character. JSON on the wire is UTF-8 (RFC 8259): encode the body as UTF-8, "
            "with any binary data in base64 strings.") from None
    if _SUSPECT.search(body) or _LONG_DIGITS.search(body):
        hooks: dict[str, Any] = {
            "parse_constant": _NonFinite, "parse_float": _float, "parse_int": _int}
    else:
        hooks = {}
    try:
        value = json.loads(text, **hooks)
    except RecursionError:
        raise NestedTooDeep(max_depth) from None
    except json.JSONDecodeError as exc:
        raise MalformedBody(
            f"the body could not be parsed as JSON ({exc.msg} at character {exc.pos}). "
            "Send a JSON object with Content-Type: application/json.") from None
    check_depth(body, value, max_depth)
    found = _find(value, "") if hooks else None
    if found is not None:
        pointer, bad = found
        if isinstance(bad, _LongInteger):
            raise InvalidNumber(
                f"{pointer} is an integer of {len(bad.text.lstrip('-'))} digits; this "
                f"service reads integers of at most {_INT_DIGITS}. Send it as a string.",
                pointer=pointer)
        raise InvalidNumber(f"{pointer} is {bad.text}, which is not a finite number; JSON "
                            "has no NaN or Infinity. Send a finite number, or leave the "
                            "field out.", pointer=pointer)
    return value


def _services(request: Request) -> Services:
    svc: Services = request.app.state.services
    return svc


def _bodies(request: Request) -> Resends:
    # The parser create_app built: it remembers this process's recent bodies.
    return _services(request).bodies


class FiniteJSONRoute(APIRoute):
    """An APIRoute whose JSON bodies must hold finite numbers only."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = self.inner_handler()
        bounds = self.bounds()

        async def checked(request: Request) -> Response:
            if request.method in ("POST", "PUT", "PATCH"):
                body = await request.body()  # cached: the handler reads it again
                parsed = await _bodies(request).read(body)
                settings = _services(request).settings
                if isinstance(parsed, jsoncodec.Unread):
                    parsed = read_strictly(body, settings.max_json_depth)
                # Before anything walks the lists: a length costs nothing to read.
                check_bounds(parsed, bounds, settings)
                # A body no longer than the limit holds no text longer than it.
                if len(body) > settings.max_message_chars:
                    check_texts(parsed, settings.max_message_chars, CONVERSATION_KEYS)
                # Starlette's own cache of request.json(), which FastAPI reads the body
                # through: the body is parsed once.
                request._json = parsed
                del body, parsed  # held by the request alone (see ``job_route._body``)
            return await handler(request)

        return checked

    def bounds(self) -> tuple[ListBound, ...]:
        """The lists of the body model that the settings bound (its ``BOUNDS``)."""
        model = self.body_field.field_info.annotation if self.body_field is not None \
            else None
        found: tuple[ListBound, ...] = getattr(model, "BOUNDS", ())
        return found

    def inner_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        """What serves the request once its numbers are checked."""
        return super().get_route_handler()
