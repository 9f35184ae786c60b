"""One POST to a provider, with its failures mapped to LLM errors (keys never in messages)."""

from __future__ import annotations

import time
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from app.llm.base import (
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


def usage_from(data: dict[str, Any], input_key: str, output_key: str) -> Usage:
    """Token usage as a provider reports it; absent or odd fields count as zero."""
    found = data.get("usage")
    usage: dict[str, Any] = found if isinstance(found, dict) else {}
    return Usage(int(usage.get(input_key) or 0), int(usage.get(output_key) or 0))


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
