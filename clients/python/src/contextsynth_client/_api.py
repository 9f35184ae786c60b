"""The API's operations, and how a request is written and an answer read, once for the
sync and the async client: they differ only in how they send and wait."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar
from urllib.parse import quote

import httpx
from pydantic import ValidationError

from contextsynth_client import models as m
from contextsynth_client._version import __version__
from contextsynth_client.errors import UnexpectedResponse, error_for
from contextsynth_client.retries import RetryPolicy, retry_after

A = TypeVar("A", bound=m.Answer)

DEFAULT_URL = "http://localhost:8080"
# A job that calls an LLM takes up to the service's LLM budget (25 s by default) on top
# of its own work; the connection itself should come at once.
DEFAULT_TIMEOUT = httpx.Timeout(60.0, connect=5.0)
URL_ENV = "CONTEXTSYNTH_URL"
KEY_ENV = "CONTEXTSYNTH_API_KEY"


@dataclass(frozen=True)
class Operation(Generic[A]):
    method: str
    path: str  # with {name} for each path parameter
    answer: type[A]


SYNTHESIZE = Operation("POST", "/synthesize", m.SynthesizeResponse)
COMPRESS_HISTORY = Operation("POST", "/compress-history", m.CompressHistoryResponse)
SUMMARIZE_TRACE = Operation("POST", "/summarize-trace", m.SummarizeTraceResponse)
RESCUE = Operation("POST", "/rescue", m.RescueResponse)
SUMMARIZE_RECALL = Operation("POST", "/summarize-recall", m.SummarizeRecallResponse)
REFLECT = Operation("POST", "/reflect", m.ReflectResponse)
EXPAND = Operation("GET", "/expand/{handle}", m.ExpandResponse)
RECEIPT = Operation("GET", "/v1/contextsynth/receipts/{request_id}", m.ProxyReceipt)
HEALTH = Operation("GET", "/healthz", m.Health)
READY = Operation("GET", "/readyz", m.Health)


@dataclass(frozen=True)
class Config:
    """What a client is made with, checked and with the environment's defaults."""

    base_url: str
    headers: Mapping[str, str]
    timeout: httpx.Timeout
    retries: RetryPolicy

    @classmethod
    def make(cls, base_url: str | None, api_key: str | None, timeout: float | httpx.Timeout,
             retries: RetryPolicy, headers: Mapping[str, str] | None) -> Config:
        url = (base_url or os.environ.get(URL_ENV) or DEFAULT_URL).rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must be an http:// or https:// URL, not {url!r}")
        key = api_key if api_key is not None else os.environ.get(KEY_ENV)
        sent = {"user-agent": f"contextsynth-client-python/{__version__}",
                "accept": "application/json, application/problem+json"}
        if key:
            sent["authorization"] = f"Bearer {key}"
        sent.update({k.lower(): v for k, v in (headers or {}).items()})
        return cls(url, sent, timeout if isinstance(timeout, httpx.Timeout)
                   else httpx.Timeout(timeout), retries)

    def request(self, http: httpx.Client | httpx.AsyncClient, op: Operation[A],
                body: m.Request | None, path: Mapping[str, str]) -> httpx.Request:
        url = self.base_url + op.path.format_map({k: quote(v, safe="") for k, v in path.items()})
        headers = dict(self.headers)
        content = None
        if body is not None:
            # Only the fields set: the service's defaults apply to the rest.
            content = body.model_dump_json(by_alias=True, exclude_unset=True).encode()
            headers["content-type"] = "application/json"
        return http.build_request(op.method, url, content=content, headers=headers,
                                  timeout=self.timeout)

    def read(self, op: Operation[A], response: httpx.Response) -> A:
        """The answer's model, or the exception for its problem document."""
        if not response.is_success:
            raise error_for(response, retry_after(response, self.retries.clock))
        try:
            return op.answer.model_validate_json(response.content)
        except ValidationError as exc:
            raise UnexpectedResponse(
                f"{op.method} {op.path} answered {response.status_code} with a body that is "
                f"not a {op.answer.__name__}: {exc}", response) from exc
