"""Each wire format's converter (from OpenAI messages) and invariant check, in one table."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.support.convert import to_anthropic, to_gemini, to_responses
from tests.support.invariants import (
    check_anthropic,
    check_gemini,
    check_openai,
    check_responses,
)

Payload = dict[str, Any]


def _check_openai(before: Payload, after: Payload) -> None:
    check_openai(before["messages"], after["messages"])


# name -> (format the engine should detect, convert, check)
CASES: dict[str, tuple[str, Callable[[list[dict[str, Any]]], Payload],
                       Callable[[Payload, Payload], None]]] = {
    "openai": ("openai", lambda m: {"messages": m}, _check_openai),
    "anthropic": ("anthropic", to_anthropic, check_anthropic),
    "gemini": ("gemini", to_gemini, check_gemini),
    "gemini-ids": ("gemini", lambda m: to_gemini(m, with_ids=True), check_gemini),
    "responses": ("responses", to_responses, check_responses),
}
