"""The service's one way to call an LLM: provider choice, retries, breaker, budget, metrics."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import cast

import httpx
from opentelemetry.trace import Span, SpanKind, Tracer

from app.adapters.llm.base import Completion, CompletionRequest, LLMError, LLMTimeout, Provider
from app.adapters.llm.resilience import CircuitBreaker, RetryPolicy, with_retries
from app.adapters.metrics import Metrics
from app.adapters.tracing import NO_TRACER, span
from app.engine.errors import InvalidOption

# The model label of a call to a model no configuration names.
OTHER_MODEL = "other"


class LLMClient:
    def __init__(
        self,
        providers: Mapping[str, Provider],
        metrics: Metrics,
        *,
        policy: RetryPolicy | None = None,
        budget_s: float = 120.0,
        models: Iterable[str] = (),
        allowed_models: Iterable[str] = (),
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
        tracer: Tracer = NO_TRACER,
    ) -> None:
        self._providers = dict(providers)
        self._tracer = tracer
        # A request spends the operator's key: it may name only the models the operator
        # configured or allowed, and metric labels name only those, so requests cannot
        # create series.
        self._models = {p.default_model for p in self._providers.values()} | set(models) \
            | set(allowed_models)
        # What a request may name on any provider: a provider's own model goes only to it
        # (another provider's API would not know it).
        self._shared_models = set(models) | set(allowed_models)
        self._metrics = metrics
        self._policy = policy or RetryPolicy()
        self._budget = budget_s
        self._sleep = sleep
        self._clock = clock
        self._breakers = {name: CircuitBreaker(clock=clock) for name in self._providers}
        self._http: httpx.AsyncClient | None = None

    @property
    def available(self) -> bool:
        return bool(self._providers)

    @property
    def names(self) -> list[str]:
        return list(self._providers)

    def breaker(self, name: str) -> CircuitBreaker:
        return self._breakers[name]

    async def start(self) -> None:
        # One pooled client for every provider; redirects are not followed for POSTs.
        self._http = httpx.AsyncClient(
            limits=httpx.Limits(max_connections=100, max_keepalive_connections=20))

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    def provider(self, name: str | None, pointer: str = "/synthesis_provider") -> Provider:
        """The provider named ``name`` (the first configured for None); ``pointer`` is
        where the request named it, for the error when none is configured under it."""
        if not self._providers:
            raise InvalidOption("no LLM provider is configured")
        if name is None:
            return next(iter(self._providers.values()))
        found = self._providers.get(name)
        if found is None:
            raise InvalidOption(
                f"synthesis_provider {name!r} is not configured; configured: "
                f"{', '.join(self._providers)}.", pointer=pointer)
        return found

    def check_model(self, name: str | None, pointer: str = "/synthesis_model",
                    provider: Provider | None = None) -> None:
        """Raise InvalidOption when a request names a model the operator did not allow, or,
        for ``provider``, a model that is another provider's own."""
        if name is None:
            return
        if name not in self._models:
            raise InvalidOption(
                f"synthesis_model {name!r} is not allowed on this service; allowed: "
                f"{', '.join(sorted(self._models))}. Leave it out for the default, or ask "
                "the operator to add it to CONTEXTSYNTH_LLM_ALLOWED_MODELS.", pointer=pointer)
        if provider is not None and name != provider.default_model \
                and name not in self._shared_models:
            owners = [p.name for p in self._providers.values() if p.default_model == name]
            raise InvalidOption(
                f"synthesis_model {name!r} is the model of provider {owners[0]!r}, not of "
                f"{provider.name!r}, which would not know it. Name provider {owners[0]!r} in "
                f"synthesis_provider, or leave synthesis_model out for {provider.name!r}'s "
                f"{provider.default_model!r}.", pointer=pointer)

    @staticmethod
    def check_temperature(value: float | None, provider: Provider,
                          pointer: str = "/synthesis_temperature") -> None:
        """Raise InvalidOption when ``provider``'s API does not take the temperature."""
        if value is not None and value > provider.max_temperature:
            raise InvalidOption(
                f"synthesis_temperature {value:g} is above {provider.max_temperature:g}, the "
                f"most provider {provider.name!r} takes; send 0 to "
                f"{provider.max_temperature:g}.", pointer=pointer)

    async def complete(self, request: CompletionRequest, provider_name: str | None) -> Completion:
        provider = self.provider(provider_name)
        model = request.model or provider.default_model
        # Named and described as OpenTelemetry's conventions for generative AI say.
        with span(self._tracer, f"chat {model}", kind=SpanKind.CLIENT, attributes={
                "gen_ai.operation.name": "chat", "gen_ai.request.model": model,
                "gen_ai.request.max_tokens": request.max_tokens,
                "gen_ai.request.temperature": request.temperature,
                "contextsynth.llm.provider": provider.name}) as current:
            completion = await self._complete(request, provider, model)
            _usage(current, completion)
            return completion

    async def _complete(self, request: CompletionRequest, provider: Provider, model: str,
                        ) -> Completion:
        http = self._http
        if http is None:
            raise RuntimeError("LLMClient.start() was not called (the app lifespan starts it)")
        labels = (provider.name, model if model in self._models else OTHER_MODEL)
        started = self._clock()
        outcome = "ok"
        try:
            async with asyncio.timeout(self._budget):
                result = await with_retries(
                    lambda: provider.complete(http, request), policy=self._policy,
                    breaker=self._breakers[provider.name], provider=provider.name,
                    sleep=self._sleep)
        except TimeoutError:
            outcome = "budget_exhausted"
            # A provider that hangs past the whole budget is as unhealthy as one that
            # fails: the breaker counts it, so later callers fall back at once.
            self._breakers[provider.name].record(False)
            raise LLMTimeout(f"the LLM time budget of {self._budget:g} s ran out calling "
                             f"provider {provider.name!r}") from None
        except LLMError as exc:
            outcome = exc.reason
            raise
        finally:
            self._metrics.llm_requests.labels(*labels, outcome).inc()
            self._metrics.llm_duration.labels(*labels).observe(self._clock() - started)
        completion = cast(Completion, result)
        self._metrics.llm_tokens.labels(*labels, "in").inc(completion.usage.input_tokens)
        self._metrics.llm_tokens.labels(*labels, "out").inc(completion.usage.output_tokens)
        return completion


def _usage(current: Span, completion: Completion) -> None:
    if current.is_recording():
        current.set_attributes({"gen_ai.response.model": completion.model,
                                "gen_ai.usage.input_tokens": completion.usage.input_tokens,
                                "gen_ai.usage.output_tokens": completion.usage.output_tokens})
