"""The blocking client."""

from __future__ import annotations

import time
from collections.abc import Mapping
from types import TracebackType

import httpx

from contextsynth_client import _api as api
from contextsynth_client import models as m
from contextsynth_client.retries import RetryPolicy, Sleep


class Client:
    """The contextsynth API over HTTP, one method per operation.

    ``base_url``: the service (default: $CONTEXTSYNTH_URL, else http://localhost:8080).
    ``api_key``: sent as a bearer token, for a service with API keys (default:
    $CONTEXTSYNTH_API_KEY). ``timeout``: seconds, or an ``httpx.Timeout``.
    ``retries``: when to try again after a 429 or 503 (``NO_RETRIES`` never does).
    ``headers``: sent with every request. ``sleep``: how to wait between tries (a test
    passes its own). ``http_client``: an ``httpx.Client`` to send through (its pool,
    proxies, TLS settings); the client then leaves it open on close.

    Errors: ``APIError`` and its subclasses for an error answer, with its problem
    document; httpx's ``TransportError`` for a network failure or a timeout.
    """

    def __init__(self, base_url: str | None = None, *, api_key: str | None = None,
                 timeout: float | httpx.Timeout = api.DEFAULT_TIMEOUT,
                 retries: RetryPolicy | None = None, headers: Mapping[str, str] | None = None,
                 sleep: Sleep = time.sleep, http_client: httpx.Client | None = None) -> None:
        self._config = api.Config.make(base_url, api_key, timeout, retries or RetryPolicy(),
                                       headers)
        self._sleep = sleep
        self._owned = http_client is None
        self._http = http_client if http_client is not None else httpx.Client()

    @property
    def base_url(self) -> str:
        return self._config.base_url

    def synthesize(self, request: m.SynthesizeRequest) -> m.SynthesizeResponse:
        """Compact the agent's transcript for its next model call."""
        return self._call(api.SYNTHESIZE, request)

    def compress_history(self, request: m.CompressHistoryRequest) -> m.CompressHistoryResponse:
        """Replace older chat history by a sectioned summary."""
        return self._call(api.COMPRESS_HISTORY, request)

    def summarize_trace(self, request: m.SummarizeTraceRequest) -> m.SummarizeTraceResponse:
        """Shrink a ReAct action trace."""
        return self._call(api.SUMMARIZE_TRACE, request)

    def rescue(self, request: m.RescueRequest) -> m.RescueResponse:
        """Answer the user from an out-of-steps agent's evidence."""
        return self._call(api.RESCUE, request)

    def summarize_recall(self, request: m.SummarizeRecallRequest) -> m.SummarizeRecallResponse:
        """One short, cited answer from recalled memories."""
        return self._call(api.SUMMARIZE_RECALL, request)

    def reflect(self, request: m.ReflectRequest) -> m.ReflectResponse:
        """Insights, learnings and a verdict on one iteration's tool calls."""
        return self._call(api.REFLECT, request)

    def expand(self, handle: str) -> m.ExpandResponse:
        """The originals a compaction replaced, by the handle of its receipt."""
        return self._call(api.EXPAND, handle=handle)

    def receipt(self, request_id: str) -> m.ProxyReceipt:
        """What a request sent through proxy mode dropped."""
        return self._call(api.RECEIPT, request_id=request_id)

    def health(self) -> m.Health:
        """Liveness: the service answers."""
        return self._call(api.HEALTH)

    def ready(self) -> m.Health:
        """Readiness, with the state of the service's dependencies."""
        return self._call(api.READY)

    def _call(self, op: api.Operation[api.A], body: m.Request | None = None,
              **path: str) -> api.A:
        config = self._config
        request = config.request(self._http, op, body, path)
        attempt = 1
        while True:
            response = self._http.send(request)
            wait = config.retries.wait_before_retry(response, attempt)
            if wait is None:
                return config.read(op, response)
            response.close()
            self._sleep(wait)
            attempt += 1

    def close(self) -> None:
        if self._owned:
            self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
