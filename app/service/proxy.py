"""Proxy mode: a provider's own request in, its conversation compacted by the
``/synthesize`` job, forwarded upstream, and the upstream's answer out as it came.

Compaction never makes a request fail that the provider would have answered: a body
that is not a conversation this service can read, or any error while compacting it,
sends the request on as it came (counted as ``failed``).
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app.adapters import jsoncodec
from app.adapters.cache import Cache, receipt_key
from app.adapters.metrics import Metrics
from app.adapters.upstream import Answer, Upstream
from app.engine.compaction.tiers import infer_tier
from app.engine.jobs.synthesize.modes import Mode
from app.engine.jobs.synthesize.plan import SynthesizeJob, SynthesizeRequest
from app.engine.jobs.synthesize.reasoning import Bundle, resolve
from app.engine.transcript.formats import WireFormat
from app.service.conversation import conversation_key
from app.service.llm_call import LLMOptions
from app.service.receipts import receipt
from app.service.runner import Runner
from app.settings import Settings

log = logging.getLogger(__name__)
MODES = ("off", "fast", "auto", "deep")
# Where SDKs put a provider key.
_KEY_HEADERS = frozenset({"authorization", "x-api-key", "api-key"})


@dataclass(frozen=True, slots=True)
class ProviderRoute:
    upstream: str  # its name in metrics and settings
    format: str  # the wire format of its conversation
    path: str  # appended to the upstream's base URL


# The provider routes the proxy serves, by the path a caller's SDK posts to.
PROVIDER_ROUTES: Mapping[str, ProviderRoute] = {
    "/v1/chat/completions": ProviderRoute("openai", "openai", "/chat/completions"),
    "/v1/messages": ProviderRoute("anthropic", "anthropic", "/v1/messages"),
    "/v1/responses": ProviderRoute("openai", "responses", "/responses"),
}


# Where the providers' requests hold their conversation (Responses: input).
_CONVERSATIONS = ("messages", "input")


@dataclass(frozen=True, slots=True)
class Compacted:
    body: bytes
    compaction: str  # compacted, unchanged, off or failed
    mode: str  # the mode that ran (off when none did)
    tokens_before: int = 0
    tokens_after: int = 0
    stable_messages: int = 0
    # What GET /v1/contextsynth/receipts/{id} answers, saved once the answer is on its way.
    receipt: Mapping[str, Any] | None = None
    # The key a router sends this conversation's steps on by (see ``conversation``).
    conversation: str | None = None


class ProxyService:
    def __init__(self, runner: Runner, job: SynthesizeJob, formats: Mapping[str, WireFormat],
                 upstream: Upstream, settings: Settings, metrics: Metrics,
                 cache: Cache, environ: Mapping[str, str]) -> None:
        self._runner = runner
        self._job = job
        self._formats = formats
        self._upstream = upstream
        self._settings = settings
        self._metrics = metrics
        self._cache = cache
        self._bases = {"openai": settings.proxy_openai_url.rstrip("/"),
                       "anthropic": settings.proxy_anthropic_url.rstrip("/")}
        # Read once at start-up, like the LLM providers' keys; never logged.
        self._keys = {(tenant, upstream): environ[name]
                      for tenant, names in settings.proxy_tenant_keys.items()
                      for upstream, name in names.items() if environ.get(name)}

    def credentials(self, route: ProviderRoute, tenant: str,
                    headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """The headers to forward: the caller's key, or the tenant's server-side key in
        its place (in the header its provider reads)."""
        key = self._keys.get((tenant, route.upstream))
        if key is None:
            return headers
        kept = [(k, v) for k, v in headers if k.lower() not in _KEY_HEADERS]
        if route.upstream == "anthropic":
            return [*kept, ("x-api-key", key)]
        return [*kept, ("authorization", f"Bearer {key}")]

    async def compact(self, route: ProviderRoute, raw: bytes, mode: str, tenant: str,
                      request_id: str | None) -> Compacted:
        if mode == "off":
            return Compacted(raw, "off", "off")
        started = time.perf_counter()
        try:
            compacted = await self._compact(route, raw, mode, tenant, request_id)
        except Exception as exc:  # whatever broke, the request goes on as it was sent
            log.warning("proxy: compaction failed (%s), forwarding the request as it came",
                        type(exc).__name__)
            compacted = Compacted(raw, "failed", "off")
        self._metrics.proxy_compaction.labels(route.upstream).observe(
            time.perf_counter() - started)
        return compacted

    async def _compact(self, route: ProviderRoute, raw: bytes, mode: str, tenant: str,
                       request_id: str | None) -> Compacted:
        body = jsoncodec.loads(raw)
        if not isinstance(body, dict):
            raise ValueError("the body is not a JSON object")
        wire = self._formats[route.format]
        model = body.get("model") if isinstance(body.get("model"), str) else None
        settings = self._settings
        request = SynthesizeRequest(
            {k: body[k] for k in wire.keys if k in body}, route.format, model=model,
            default_tier=settings.default_tier,
            resolved=resolve(Bundle(synthesis=Mode(mode)), {}, "reactive"),
            # The agent's own loop decides what comes next: no nudge is appended.
            steer=False, dedicated_model=bool(settings.synthesis_model),
            deep_threshold_tokens=settings.deep_threshold_tokens)
        ran = await self._runner.run(self._job, request, LLMOptions(), tenant)
        out = ran.value
        synthesis = out.synthesis
        tier = (infer_tier(model) or settings.default_tier).value
        self._metrics.proxy_tokens.labels(route.upstream, tier, "in").inc(
            synthesis.tokens_before)
        self._metrics.proxy_tokens.labels(route.upstream, tier, "out").inc(
            synthesis.tokens_after)
        # A caller may send the same request id twice: each receipt also gets an id of
        # its own, which no later request can take over.
        document = None if request_id is None else {
            "request_id": request_id, "receipt_id": f"{request_id}.{secrets.token_hex(4)}",
            "mode": ran.report.mode,
            "tokens_before": synthesis.tokens_before, "tokens_after": synthesis.tokens_after,
            "stable_messages": out.prefix.stable_messages,
            "receipt": receipt(ran.report.spans, ran.report.lost)}
        key = conversation_key(None, body, _CONVERSATIONS)
        if not synthesis.compacted:
            return Compacted(raw, "unchanged", ran.report.mode, synthesis.tokens_before,
                             synthesis.tokens_after, out.prefix.stable_messages, document, key)
        sent = {k: v for k, v in body.items() if k not in wire.keys}
        sent.update(out.body)
        return Compacted(jsoncodec.dumps(sent), "compacted", ran.report.mode,
                         synthesis.tokens_before, synthesis.tokens_after,
                         out.prefix.stable_messages, document, key)

    async def save_receipt(self, tenant: str, compacted: Compacted) -> None:
        """After the answer has started: a cache write is no part of what the caller
        waits for."""
        document = compacted.receipt
        if document is not None:
            raw, ttl = jsoncodec.dumps(document), self._settings.expand_ttl_s
            await self._cache.set(receipt_key(tenant, str(document["receipt_id"])), raw, ttl)
            # Under the request id, the first receipt stays: a reused id cannot replace it.
            await self._cache.add(receipt_key(tenant, str(document["request_id"])), raw, ttl)

    async def receipt(self, tenant: str, request_id: str) -> dict[str, Any] | None:
        raw = await self._cache.get(receipt_key(tenant, request_id))
        if raw is None:
            return None
        found = jsoncodec.loads(raw)
        return found if isinstance(found, dict) else None

    async def forward(self, route: ProviderRoute, body: bytes,
                      headers: list[tuple[str, str]], compacted: Compacted) -> Answer:
        started = time.perf_counter()
        url = self._bases[route.upstream] + route.path
        answer = await self._upstream.send(route.upstream, url, body, headers)
        self._metrics.proxy_upstream.labels(route.upstream).observe(
            time.perf_counter() - started)
        self._metrics.proxy_requests.labels(route.upstream, compacted.compaction).inc()
        return answer
