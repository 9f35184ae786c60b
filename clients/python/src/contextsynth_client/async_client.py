"""The asyncio client: the same operations as ``Client``, awaited."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from types import TracebackType

import httpx

from contextsynth_client import _api as api
from contextsynth_client import models as m
from contextsynth_client.retries import AsyncSleep, RetryPolicy


class AsyncClient:
    """As ``Client``, for asyncio: ``sleep`` is awaited and ``http_client`` is an
    ``httpx.AsyncClient``."""

    def __init__(self, base_url: str | None = None, *, api_key: str | None = None,
                 timeout: float | httpx.Timeout = api.DEFAULT_TIMEOUT,
                 retries: RetryPolicy | None = None, headers: Mapping[str, str] | None = None,
                 sleep: AsyncSleep = asyncio.sleep,
                 http_client: httpx.AsyncClient | None = None) -> None:
        self._config = api.Config.make(base_url, api_key, timeout, retries or RetryPolicy(),
                                       headers)
        self._sleep = sleep
        self._owned = http_client is None
        self._http = http_client if http_client is not None else httpx.AsyncClient()

    @property
    def base_url(self) -> str:
        return self._config.base_url

    async def synthesize(self, request: m.SynthesizeRequest) -> m.SynthesizeResponse:
        """Compact the agent's transcript for its next model call."""
        return await self._call(api.SYNTHESIZE, request)

    async def compress_history(self, request: m.CompressHistoryRequest,
                               ) -> m.CompressHistoryResponse:
        """Replace older chat history by a sectioned summary."""
        return await self._call(api.COMPRESS_HISTORY, request)

    async def summarize_trace(self, request: m.SummarizeTraceRequest,
                              ) -> m.SummarizeTraceResponse:
        """Shrink a ReAct action trace."""
        return await self._call(api.SUMMARIZE_TRACE, request)

    async def rescue(self, request: m.RescueRequest) -> m.RescueResponse:
        """Answer the user from an out-of-steps agent's evidence."""
        return await self._call(api.RESCUE, request)

    async def summarize_recall(self, request: m.SummarizeRecallRequest,
                               ) -> m.SummarizeRecallResponse:
        """One short, cited answer from recalled memories."""
        return await self._call(api.SUMMARIZE_RECALL, request)

    async def reflect(self, request: m.ReflectRequest) -> m.ReflectResponse:
        """Insights, learnings and a verdict on one iteration's tool calls."""
        return await self._call(api.REFLECT, request)

    async def expand(self, handle: str) -> m.ExpandResponse:
        """The originals a compaction replaced, by the handle of its receipt."""
        return await self._call(api.EXPAND, handle=handle)

    async def receipt(self, request_id: str) -> m.ProxyReceipt:
        """What a request sent through proxy mode dropped."""
        return await self._call(api.RECEIPT, request_id=request_id)

    async def health(self) -> m.Health:
        """Liveness: the service answers."""
        return await self._call(api.HEALTH)

    async def ready(self) -> m.Health:
        """Readiness, with the state of the service's dependencies."""
        return await self._call(api.READY)

    async def _call(self, op: api.Operation[api.A], body: m.Request | None = None,
                    **path: str) -> api.A:
        config = self._config
        request = config.request(self._http, op, body, path)
        attempt = 1
        while True:
            response = await self._http.send(request)
            wait = config.retries.wait_before_retry(response, attempt)
            if wait is None:
                return config.read(op, response)
            await response.aclose()
            await self._sleep(wait)
            attempt += 1

    async def aclose(self) -> None:
        if self._owned:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()
