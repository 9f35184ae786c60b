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
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any
from urllib.parse import parse_qsl, urlencode

import httpx

from app.adapters import jsoncodec
from app.adapters.cache import Cache, receipt_key
from app.adapters.metrics import Metrics
from app.adapters.upstream import Transport, UpstreamAnswer, forwarded
from app.engine.compaction.tiers import infer_tier
from app.engine.errors import BudgetTooSmall, HandlesUnavailable, InvalidOption
from app.engine.jobs.synthesize.budget import Budget
from app.engine.jobs.synthesize.modes import Mode
from app.engine.jobs.synthesize.plan import SynthesizeJob, SynthesizeJobRequest
from app.engine.jobs.synthesize.prefix import BREAKPOINT_FORMAT
from app.engine.jobs.synthesize.reasoning import Bundle, resolve
from app.engine.transcript.formats import WireFormat
from app.service.conversation import HEADER as CONVERSATION
from app.service.conversation import conversation_key
from app.service.expand_stream import ROUNDS, Round
from app.service.expand_tool import (
    SHAPES,
    STREAMED,
    ExpandCall,
    conversation_field,
    may_offer,
    read_back,
)
from app.service.expansion_log import Anchor, ExpansionLog, anchor
from app.service.handles import HandleStore
from app.service.jobs import synthesis_defaults
from app.service.llm_call import LLMOptions
from app.service.proxy_routes import (
    BASE_HOLDS,
    COUNT_ROUTES,
    KEY_PARAM,
    PROVIDER_ROUTES,
    ProviderRoute,
    check_spelling,
    passed_to,
)
from app.service.receipts import receipt
from app.service.runner import Runner
from app.service.server_keys import ServerKeyPolicy, requested_model
from app.service.sse import EventDecoder
from app.settings import Settings

log = logging.getLogger(__name__)
MODES = ("off", "fast", "auto", "deep")
# Where SDKs put a provider key.
_KEY_HEADERS = frozenset({"authorization", "x-api-key", "api-key", "x-goog-api-key"})
# Where a tenant's server-side key goes, by upstream: the header its provider reads, and
# how the key is written there.
_KEY_PLACES: Mapping[str, tuple[str, str]] = {"openai": ("authorization", "Bearer {}"),
                                              "anthropic": ("x-api-key", "{}"),
                                              "gemini": ("x-goog-api-key", "{}")}
_PREVIOUS_RESPONSE = ("previous_response_id: the provider holds this conversation, and "
                      "only its new turns came here; send the whole input to have it "
                      "compacted")
# What x-contextsynth-cache-breakpoints says when it was asked of another format.
_BREAKPOINTS_IGNORED = ("ignored: cache_control breakpoints are Anthropic's (/v1/messages); "
                        "this provider caches repeated prefixes without marks")
# Where the providers' requests hold their conversation (Responses: input, Gemini:
# contents).
_CONVERSATIONS = ("messages", "input", "contents")

BUDGET_HEADER = "x-contextsynth-budget-tokens"
TRIGGER_HEADER = "x-contextsynth-trigger-tokens"


def budget_of(headers: Sequence[tuple[str, str]], upstream: str) -> Budget | None:
    """The token budget and trigger a proxied call asks for in its headers (as
    ``/synthesize``'s budget_tokens and trigger_tokens); a value that is not a whole
    number is a 400 in the provider's shape."""
    values: list[int | None] = []
    for name in (BUDGET_HEADER, TRIGGER_HEADER):
        raw = _header(headers, name)
        if raw is None:
            values.append(None)
            continue
        if not raw.strip().isdigit() or (name == BUDGET_HEADER and int(raw) < 1):
            raise ProxyHeaderInvalid(
                f"{name} {raw!r} is not a whole number of tokens; send, for example, "
                f"'{name}: 16000', or leave the header out.", upstream=upstream)
        values.append(int(raw))
    tokens, trigger = values
    return None if tokens is None and trigger is None else Budget(tokens, trigger)


def _without_key(query: str) -> str:
    return urlencode([(k, v) for k, v in parse_qsl(query, keep_blank_values=True)
                      if k != KEY_PARAM])


# Gemini streams by its path, in server-sent events when the query asks for them (without
# alt=sse, the stream is a JSON array, which the expand rounds cannot go on inside).
_GEMINI_STREAM = ":streamGenerateContent"


def _streamed(route: ProviderRoute, body: dict[str, Any]) -> bool:
    """Whether the answer comes as a stream: the body asks (stream: true), or the path."""
    return bool(body.get("stream")) or _GEMINI_STREAM in route.path


def _events(route: ProviderRoute) -> bool:
    """Whether a streamed answer comes as server-sent events (what expand_stream reads)."""
    if _GEMINI_STREAM not in route.path:
        return True
    return ("alt", "sse") in parse_qsl(route.path.partition("?")[2])


def _json_object(raw: bytes) -> dict[str, Any] | None:
    try:
        value = jsoncodec.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


@dataclass(frozen=True, slots=True)
class Compacted:
    body: bytes
    compaction: str  # compacted, unchanged, off or failed
    mode: str  # the mode that ran (off when none did)
    tokens_before: int = 0
    tokens_after: int = 0
    stable_messages: int = 0
    model: str | None = None  # as the request named it (None when the body was not read)
    # What GET /v1/contextsynth/receipts/{id} answers, saved once the answer is on its way.
    receipt: Mapping[str, Any] | None = None
    # The key a router sends this conversation's steps on by (see ``conversation``).
    conversation: str | None = None
    # The request as sent upstream when it offers the expand tool (see ``expand_tool``).
    offered: dict[str, Any] | None = None
    # Why a request that could have been compacted was sent as it came.
    reason: str | None = None
    # Where this request's answer goes in the client's conversation, for the expand
    # rounds it may take (see ``expansion_log``).
    anchor: Anchor | None = None
    # What x-contextsynth-cache-breakpoints answers: the marks placed, or why none could
    # be (None: the caller did not ask).
    breakpoints: str | None = None


@dataclass(slots=True)
class Expansions:
    """What answering the expand tool took: extra rounds, their tokens, the handles."""

    rounds: int = 0
    tokens: int = 0
    handles: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Answered:
    """A whole answer, read by the proxy because it may answer the tool's calls."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes
    expansions: Expansions


class ProxyHeaderInvalid(InvalidOption):
    """A contextsynth header on a provider call has a value the proxy cannot use: a 400
    in that provider's own error shape, which its SDK raises as a bad request."""

    slug = "invalid-header"
    title = "A contextsynth header has a value the proxy cannot use"

    def __init__(self, detail: str, *, upstream: str) -> None:
        super().__init__(detail)
        self.upstream = upstream


@dataclass(frozen=True, slots=True)
class ProxyCall:
    """A provider request as its caller sent it, and what the route read of it."""

    path: str  # a key of PROVIDER_ROUTES, or of COUNT_ROUTES
    body: bytes
    headers: Sequence[tuple[str, str]]  # every header, as sent
    mode: str  # one of MODES
    tenant: str
    request_id: str | None = None
    expand: bool = True  # the caller allows the expand tool
    # Told what compaction did before the request goes upstream, so that the access
    # log has it even when the upstream then fails.
    compacted: Callable[[Compacted], None] | None = None
    # The caller asks for Anthropic cache_control breakpoints where the prefix that later
    # calls resend ends (x-contextsynth-cache-breakpoints; other formats ignore it).
    cache_breakpoints: bool = False
    params: Mapping[str, str] = field(default_factory=dict)  # the path's ({model})
    query: str = ""  # as it came, forwarded as it came
    # x-contextsynth-budget-tokens and x-contextsynth-trigger-tokens (see budget_of).
    budget: Budget | None = None


@dataclass(frozen=True, slots=True)
class Proxied:
    """What to answer: the upstream's status and headers beside contextsynth's, the body
    whole or as it comes, and what to do once it has been sent (save the receipt)."""

    status: int
    headers: httpx.Headers  # any case, a name more than once (see ``answer_headers``)
    body: bytes | AsyncIterator[bytes]
    compacted: Compacted
    after: Callable[[], Awaitable[None]] | None = None
    upstream: str = ""  # the provider's name in settings and metrics

    def upstream_request_id(self) -> str | None:
        """The provider's id of its answer (OpenAI's x-request-id, Anthropic's
        request-id), for finding a call in the provider's logs."""
        found: str | None = self.headers.get("x-request-id") or self.headers.get("request-id")
        return found


def answer_headers(upstream: Sequence[tuple[str, str]],
                   ours: Mapping[str, str]) -> httpx.Headers:
    """The upstream's headers, every one as it came (OpenAI spells ``X-Request-ID``; a
    provider may send a name twice), with contextsynth's set over any of the same name."""
    headers = httpx.Headers(list(upstream))
    for name, value in ours.items():
        headers[name] = value
    return headers


def own_headers(compacted: Compacted, sent_key: str | None) -> dict[str, str]:
    """contextsynth's headers on a proxied answer: what it did to the request."""
    headers = {"x-contextsynth-mode": compacted.mode,
               "x-contextsynth-compaction": compacted.compaction,
               "x-contextsynth-tokens-before": str(compacted.tokens_before),
               "x-contextsynth-tokens-after": str(compacted.tokens_after),
               "x-contextsynth-stable-messages": str(compacted.stable_messages)}
    if compacted.receipt is not None:
        headers["x-contextsynth-receipt"] = str(compacted.receipt["receipt_id"])
    if compacted.reason is not None:
        headers["x-contextsynth-reason"] = compacted.reason
    if compacted.breakpoints is not None:
        headers["x-contextsynth-cache-breakpoints"] = compacted.breakpoints
    # The caller's key as sent, else the one its conversation's start gives (none when
    # the proxy did not read the body: mode off); an ingress routes the next step on it.
    key = conversation_key(sent_key, None, ()) or compacted.conversation
    if key is not None:
        headers[CONVERSATION] = key
    return headers


def _header(headers: Sequence[tuple[str, str]], name: str) -> str | None:
    return next((v for k, v in headers if k.lower() == name), None)


class ProxyService:
    def __init__(self, runner: Runner, job: SynthesizeJob, formats: Mapping[str, WireFormat],
                 upstream: Transport, settings: Settings, metrics: Metrics,
                 cache: Cache, handles: HandleStore, environ: Mapping[str, str]) -> None:
        self._runner = runner
        self._handles = handles
        self._job = job
        self._formats = formats
        self._upstream = upstream
        self._settings = settings
        self._metrics = metrics
        self._cache = cache
        self._log = ExpansionLog(cache, settings.expand_ttl_s)
        self._bases = {"openai": settings.proxy_openai_url.rstrip("/"),
                       "anthropic": settings.proxy_anthropic_url.rstrip("/"),
                       "gemini": settings.proxy_gemini_url.rstrip("/")}
        # Read once at start-up, like the LLM providers' keys; never logged.
        self._keys = {(tenant, upstream): environ[name]
                      for tenant, names in settings.proxy_tenant_keys.items()
                      for upstream, name in names.items() if environ.get(name)}
        self._policy = ServerKeyPolicy(settings.proxy_server_key_routes,
                                       settings.proxy_tenant_models)

    def _on_server_key(self, tenant: str, upstream: str) -> bool:
        return (tenant, upstream) in self._keys

    def _check_model(self, call: ProxyCall, upstream: str) -> None:
        """On the tenant's server key, the model asked for is one it may use."""
        if self._on_server_key(call.tenant, upstream):
            model = call.params.get("model") or requested_model(call.path,
                                                                _json_object(call.body))
            self._policy.check_model(call.tenant, model, upstream)

    async def handle(self, call: ProxyCall) -> Proxied:
        """A provider request answered: its conversation compacted, sent upstream with
        the caller's credentials (or the tenant's), the answer passed on as it comes;
        where the expand tool is offered, its calls answered here on the way."""
        self._check_model(call, PROVIDER_ROUTES[call.path].upstream)
        route, headers = self.outbound(PROVIDER_ROUTES[call.path], call)
        compacted = await self.compact(route, call)
        if call.compacted is not None:
            call.compacted(compacted)
        ours = own_headers(compacted, _header(call.headers, CONVERSATION))
        if compacted.offered is not None and _streamed(route, compacted.offered):
            # The rounds' streams as one; what they cost is known at its end (the receipt).
            first, chunks, done = await self.stream_expanding(route, compacted, headers,
                                                              call.tenant)
            return Proxied(first.status, answer_headers(first.headers, ours), chunks, compacted,
                           partial(self._save_expanded, call.tenant, compacted, done),
                           route.upstream)
        if compacted.offered is not None:
            # Read whole: the model may call the expand tool, which this service answers.
            answered = await self.answer_expanding(route, compacted, headers, call.tenant)
            done = answered.expansions
            return Proxied(answered.status, answer_headers(answered.headers, {
                **ours, "x-contextsynth-expansions": str(done.rounds),
                "x-contextsynth-expansion-tokens": str(done.tokens)}), answered.body, compacted,
                partial(self._save_expanded, call.tenant, compacted, done), route.upstream)
        answer = await self.forward(route, compacted.body, headers, compacted)
        # Passed on chunk by chunk as the upstream sends them, streamed answers or not.
        return Proxied(answer.status, answer_headers(answer.headers, ours), answer.chunks(),
                       compacted, partial(self.save_receipt, call.tenant, compacted),
                       route.upstream)

    async def count(self, call: ProxyCall) -> Proxied:
        """The provider's count of the request the model would receive: compacted as its
        conversation route would (the expand tool included when it would be offered),
        with no receipt, since nothing is answered. ``x-contextsynth-counted`` says which
        was counted."""
        self._check_model(call, COUNT_ROUTES[call.path].upstream)
        route, headers = self.outbound(COUNT_ROUTES[call.path], call)
        compacted = await self.compact(route, replace(call, request_id=None))
        answer = await self.forward(route, compacted.body, headers, compacted)
        counted = "compacted" if compacted.compaction == "compacted" else "as-sent"
        return Proxied(answer.status, answer_headers(answer.headers, {
            **own_headers(compacted, _header(call.headers, CONVERSATION)),
            "x-contextsynth-counted": counted}), answer.chunks(), compacted,
            upstream=route.upstream)

    async def _save_expanded(self, tenant: str, compacted: Compacted,
                             done: Expansions) -> None:
        """The receipt, with the handles the expand tool read back, once the answer is out."""
        if compacted.receipt is not None:
            compacted = replace(compacted, receipt={**compacted.receipt,
                                                    "expanded": done.handles})
        await self.save_receipt(tenant, compacted)

    def outbound(self, route: ProviderRoute, call: ProxyCall,
                 ) -> tuple[ProviderRoute, list[tuple[str, str]]]:
        """The route bound to this call (its path's parameters, its query) and the
        headers it goes upstream with."""
        headers, query = self.credentials(route, call.tenant, forwarded(call.headers),
                                          call.query)
        return route.bound(call.params, query), headers

    def credentials(self, route: ProviderRoute, tenant: str, headers: list[tuple[str, str]],
                    query: str = "") -> tuple[list[tuple[str, str]], str]:
        """The headers and query to forward: the caller's key as it came, or the
        tenant's server-side key in its place (in the header its provider reads; a key
        in the query is then left out)."""
        key = self._keys.get((tenant, route.upstream))
        if key is None:
            return headers, query
        kept = [(k, v) for k, v in headers if k.lower() not in _KEY_HEADERS]
        name, written = _KEY_PLACES[route.upstream]
        return [*kept, (name, written.format(key))], _without_key(query)

    async def compact(self, route: ProviderRoute, call: ProxyCall) -> Compacted:
        """The call's body as it goes upstream, and what was done to it."""
        compacted = await self._compacted(route, call)
        if not call.cache_breakpoints:
            return compacted
        if route.format != BREAKPOINT_FORMAT:  # never a reason to fail a provider call
            return replace(compacted, breakpoints=_BREAKPOINTS_IGNORED)
        # Off, or a body sent as it came: no marks.
        return compacted if compacted.breakpoints is not None else \
            replace(compacted, breakpoints="0")

    async def _compacted(self, route: ProviderRoute, call: ProxyCall) -> Compacted:
        if call.mode == "off":
            return Compacted(call.body, "off", "off")
        started = time.perf_counter()
        try:
            compacted = await self._compact(route, call,
                                            call.expand and self._settings.proxy_expand_tool)
        except BudgetTooSmall as exc:  # nothing fits: sent as it came, and why
            compacted = Compacted(call.body, "failed", "off", reason=exc.detail)
        except Exception as exc:  # whatever broke, the request goes on as it was sent
            log.warning("proxy: compaction failed (%s), forwarding the request as it came",
                        type(exc).__name__)
            compacted = Compacted(call.body, "failed", "off")
        self._metrics.proxy_compaction.labels(route.upstream).observe(
            time.perf_counter() - started)
        return compacted

    async def _compact(self, route: ProviderRoute, call: ProxyCall,
                       expand: bool) -> Compacted:
        """``expand``: the tool may be offered (the caller and the settings allow it)."""
        raw, tenant, request_id = call.body, call.tenant, call.request_id
        body = jsoncodec.loads(raw)
        if not isinstance(body, dict):
            raise ValueError("the body is not a JSON object")
        if route.format == "responses" and body.get("previous_response_id"):
            # The conversation is held by the provider: what came is only its new turns.
            return Compacted(raw, "unchanged", "off", reason=_PREVIOUS_RESPONSE)
        wire = self._formats[route.format]
        key = conversation_key(None, body, _CONVERSATIONS)
        where: Anchor | None = None
        replayed = False
        # Rounds the client never saw go back where they were, for a conversation the
        # tool can be offered to again (its calls must be declared).
        if expand and key is not None and may_offer(route.format, body):
            items = body[conversation_field(route.format)]
            where = anchor(items)
            spliced = await self._log.replayed(tenant, key, items)
            if spliced is not None:
                body = {**body, conversation_field(route.format): spliced}
                replayed = True
        # Gemini names the model in the path, the others in the body.
        model = body.get("model") if isinstance(body.get("model"), str) else \
            call.params.get("model")
        settings = self._settings
        marks = call.cache_breakpoints and route.format == BREAKPOINT_FORMAT
        request = SynthesizeJobRequest(
            {k: body[k] for k in wire.keys if k in body}, route.format, model=model,
            resolved=resolve(Bundle(synthesis=Mode(call.mode)), {}, "reactive"),
            # The agent's own loop decides what comes next: no nudge is appended.
            steer=False, cache_breakpoints=marks, defaults=synthesis_defaults(settings),
            budget=call.budget)
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
        placed = str(len(out.prefix.breakpoints)) if marks else None
        # Marks asked for go on a conversation compaction left as it was, too.
        marked = bool(out.prefix.breakpoints)
        if not synthesis.compacted and not replayed and not marked:
            return Compacted(raw, "unchanged", ran.report.mode, synthesis.tokens_before,
                             synthesis.tokens_after, out.prefix.stable_messages, model,
                             document, key, anchor=where, breakpoints=placed)
        if synthesis.compacted or marked:
            sent = {k: v for k, v in body.items() if k not in wire.keys}
            sent.update(out.body)
        else:
            sent = body
        # The tool reads back what was cut, so it is offered when something was (in a
        # stream only where the proxy can answer it inside one), and where the
        # conversation holds its calls again.
        offered = None
        if expand and (ran.report.spans or replayed) and may_offer(route.format, sent) and (
                not _streamed(route, body) or (route.format in STREAMED and _events(route))):
            sent = offered = SHAPES[route.format].offer(sent)
        return Compacted(jsoncodec.dumps(sent),
                         "compacted" if synthesis.compacted else "unchanged", ran.report.mode,
                         synthesis.tokens_before, synthesis.tokens_after,
                         out.prefix.stable_messages, model, document, key, offered,
                         anchor=where, breakpoints=placed)

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

    async def answer_expanding(self, route: ProviderRoute, compacted: Compacted,
                               headers: list[tuple[str, str]], tenant: str) -> Answered:
        """The upstream's answer to a request that offers the expand tool: while the
        model calls only that tool, the proxy answers the calls and asks again (up to
        ``proxy_expand_rounds`` more times); the answer passed on never shows the tool."""
        assert compacted.offered is not None
        shape, body = SHAPES[route.format], compacted.offered
        done = Expansions()
        while True:
            answer = await self.forward(route, jsoncodec.dumps(body), headers, compacted)
            raw = await answer.read()
            parsed = _json_object(raw) if answer.status == 200 else None
            calls, others = shape.calls(parsed) if parsed is not None else ([], 0)
            if parsed is None or not calls:
                await self._remember(route, tenant, compacted, body, done)
                return Answered(answer.status, answer.headers, raw, done)
            if others or done.rounds >= self._settings.proxy_expand_rounds:
                # The client's own tools come first: its calls go back to it without ours.
                await self._remember(route, tenant, compacted, body, done)
                return Answered(answer.status, answer.headers,
                                jsoncodec.dumps(shape.without_tool(parsed)), done)
            results = [(call, await self._read_back(route, tenant, call, done))
                       for call in calls]
            done.rounds += 1
            done.tokens += shape.tokens(parsed)
            self._metrics.proxy_expansion_rounds.labels(route.upstream).inc()
            self._metrics.proxy_expansion_tokens.labels(route.upstream).inc(shape.tokens(parsed))
            body = shape.next_round(body, parsed, results)

    async def stream_expanding(self, route: ProviderRoute, compacted: Compacted,
                               headers: list[tuple[str, str]], tenant: str,
                               ) -> tuple[UpstreamAnswer, AsyncIterator[bytes], Expansions]:
        """As ``answer_expanding``, for a streamed answer (see ``STREAMED``): the first
        round's status and headers, then one stream made of every round's (see
        ``expand_stream``); the expansions are known once it has ended."""
        assert compacted.offered is not None
        offered: dict[str, Any] = compacted.offered
        first = await self.forward(route, compacted.body, headers, compacted)
        done = Expansions()
        if first.status != 200:
            return first, first.chunks(), done

        async def rounds() -> AsyncIterator[bytes]:
            body, answer = offered, first
            this: Round = ROUNDS[route.format]()
            while True:
                events = EventDecoder()
                async for chunk in answer.chunks():
                    for event in events.feed(chunk):
                        passed = this.pass_on(event)
                        if passed is not None:
                            yield passed
                for event in events.end():
                    passed = this.pass_on(event)
                    if passed is not None:
                        yield passed
                calls = this.calls()
                if not calls or this.others or done.rounds >= \
                        self._settings.proxy_expand_rounds:
                    await self._remember(route, tenant, compacted, body, done)
                    for held in this.ending():
                        yield held
                    return
                results = [(c, await self._read_back(route, tenant, c, done)) for c in calls]
                done.rounds += 1
                self._metrics.proxy_expansion_rounds.labels(route.upstream).inc()
                body = this.follow(body, results)
                answer = await self.forward(route, jsoncodec.dumps(body), headers, compacted)
                if answer.status != 200:  # the stream ends as the last round ended
                    await answer.read()
                    await self._remember(route, tenant, compacted, body, done)
                    for held in this.ending():
                        yield held
                    return
                this = this.next()

        return first, rounds(), done

    async def _remember(self, route: ProviderRoute, tenant: str, compacted: Compacted,
                        body: dict[str, Any], done: Expansions) -> None:
        """The rounds' calls and results (what ``body``, the last round's request, holds
        past the request first sent), to go back into the conversation's next request."""
        offered = compacted.offered
        if not done.rounds or offered is None or compacted.anchor is None or \
                compacted.conversation is None:
            return
        field_name = conversation_field(route.format)
        items = body[field_name][len(offered[field_name]):]
        await self._log.record(tenant, compacted.conversation, compacted.anchor, items)

    async def _read_back(self, route: ProviderRoute, tenant: str, call: ExpandCall,
                         done: Expansions) -> str:
        handle = str(call.arguments.get("handle", "")).strip()
        try:
            document = await self._handles.load(tenant, handle) if handle else None
        except HandlesUnavailable:
            self._metrics.proxy_expansions.labels(route.upstream, "unavailable").inc()
            return f"{handle} cannot be read now (its store is unreachable); go on without it."
        if document is None:
            # Another tenant's handle is not found either: its text never comes back.
            self._metrics.proxy_expansions.labels(route.upstream, "not_found").inc()
            return (f"no span {handle!r} is stored: handles are the cs_ and 20 digits a note "
                    "names, and expire an hour or so after the call that made them.")
        self._metrics.proxy_expansions.labels(route.upstream, "found").inc()
        done.handles.append(handle)
        return read_back(document, call.arguments, self._settings.proxy_expand_max_chars)

    def screen(self, method: str, path: str, query: str, body: bytes,
               sent: Sequence[tuple[str, str]], tenant: str) -> str:
        """The provider a pass-through request goes to, once it is known that it may go:
        not a conversation route misspelt, and on the tenant's server key only a route
        and a model the operator allows. Raises what refuses it."""
        upstream = passed_to(path, query, sent)
        check_spelling(method, path, upstream)
        if self._on_server_key(tenant, upstream):
            self._policy.check_route(method, path, upstream)
            if method.upper() == "POST":
                self._policy.check_model(tenant, requested_model(path, _json_object(body)),
                                         upstream)
        return upstream

    async def pass_through(self, method: str, path: str, query: str, body: bytes,
                           sent: Sequence[tuple[str, str]], tenant: str) -> UpstreamAnswer:
        """A provider request this service does not compact (model lists, embeddings,
        token counts, anything else under /v1 or /v1beta), sent on untouched, to the
        provider ``passed_to`` names."""
        upstream = self.screen(method, path, query, body, sent, tenant)
        route = ProviderRoute(upstream, "", path.removeprefix(BASE_HOLDS.get(upstream, "")))
        headers, query = self.credentials(route, tenant, forwarded(sent), query)
        url = self._bases[upstream] + route.path + (f"?{query}" if query else "")
        answer = await self._upstream.send(upstream, url, body, headers, method)
        self._metrics.proxy_requests.labels(upstream, "passed").inc()
        return answer

    async def forward(self, route: ProviderRoute, body: bytes,
                      headers: list[tuple[str, str]], compacted: Compacted) -> UpstreamAnswer:
        started = time.perf_counter()
        url = self._bases[route.upstream] + route.path
        answer = await self._upstream.send(route.upstream, url, body, headers,
                                           model=compacted.model)
        self._metrics.proxy_upstream.labels(route.upstream).observe(
            time.perf_counter() - started)
        self._metrics.proxy_requests.labels(route.upstream, compacted.compaction).inc()
        return answer
