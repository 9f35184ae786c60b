"""One POST to a provider, with its failures mapped to LLM errors (keys never in messages)."""

from __future__ import annotations

import time
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from app.adapters.llm.base import (
    LLMBadResponse,
    LLMRateLimited,
    LLMRejected,
    LLMServerError,
    LLMTimeout,
    Usage,
)

_SHOWN_BODY = 300


def retry_after(response: httpx.Response) -> float | None:
    """Seconds to wait, from ``Retry-After`` as seconds or as an HTTP date."""
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        return max(parsedate_to_datetime(value).timestamp() - time.time(), 0.0)
    except (TypeError, ValueError):
        return None


def usage_from(data: dict[str, Any], input_key: str, output_key: str,
               provider: str) -> Usage:
    """Token usage as a provider reports it. Usage is optional (absent fields count as
    zero), but what is there must be token counts: anything else means the reply is
    not what the provider's API promises, and it fails like any unusable reply."""
    found = data.get("usage")
    if found is None:
        return Usage()
    if not isinstance(found, dict):
        raise LLMBadResponse(f"provider {provider!r} answered with 'usage' that is not an "
                             "object")
    return Usage(_count(found, input_key, provider), _count(found, output_key, provider))


def _count(usage: dict[str, Any], key: str, provider: str) -> int:
    value = usage.get(key)
    if value is None:
        return 0
    # JSON numbers may come as 12.0; bools are ints to Python but not counts.
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise LLMBadResponse(f"provider {provider!r} answered with usage.{key} = "
                             f"{str(value)[:40]!r}, not a token count")
    return value


async def post_json(
    http: httpx.AsyncClient, url: str, *, headers: dict[str, str], body: dict[str, Any],
    timeout: float, provider: str,
) -> dict[str, Any]:
    try:
        response = await http.post(url, json=body, headers=headers, timeout=timeout)
    except httpx.TimeoutException:
        raise LLMTimeout(f"provider {provider!r} did not answer within {timeout:g} s") from None
    except httpx.TransportError as exc:
        raise LLMServerError(
            f"provider {provider!r} could not be reached ({type(exc).__name__})") from None
    status = response.status_code
    shown = response.text[:_SHOWN_BODY]
    if status == 429:
        raise LLMRateLimited(f"provider {provider!r} is rate limiting (429): {shown}",
                             retry_after=retry_after(response))
    if status >= 500:
        raise LLMServerError(f"provider {provider!r} failed ({status}): {shown}",
                             retry_after=retry_after(response))
    if status >= 400:
        raise LLMRejected(f"provider {provider!r} rejected the request ({status}): {shown}")
    try:
        data = response.json()
    except ValueError:
        raise LLMBadResponse(
            f"provider {provider!r} answered {status} with a body that is not JSON: "
            f"{shown!r}") from None
    if not isinstance(data, dict):
        raise LLMBadResponse(f"provider {provider!r} answered with JSON that is not an object")
    return data
