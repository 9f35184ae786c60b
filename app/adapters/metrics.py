"""Prometheus metrics, built against a registry the app is given."""

from __future__ import annotations

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
)
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

# Engine work is milliseconds; LLM-backed modes will take seconds.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
                   30, 60, 120)
RATIO_BUCKETS = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0)


class Metrics:
    def __init__(self, registry: CollectorRegistry, multiprocess_dir: str | None = None,
                 *, version: str = "unknown", engine: str = "unknown") -> None:
        self.registry = registry
        # Set when prometheus-client runs in multiprocess mode (PROMETHEUS_MULTIPROC_DIR).
        self.multiprocess_dir = multiprocess_dir
        # The warm path's caches (app.adapters.warmpath), read at each scrape.
        self.warm_path: Collector | None = None
        add_runtime_collectors(registry)
        # What is running, as a series of value 1 (the convention of *_build_info): a
        # dashboard joins it to tell replicas of two releases apart.
        self.build_info = Gauge(
            "contextsynth_build_info", "The version running, and whether its engine is "
            "compiled (mypyc) or pure Python.", ["version", "engine"], registry=registry,
            multiprocess_mode="max")
        self.build_info.labels(version, engine).set(1)
        # Label names, each with one meaning: ``route`` is the path template that served
        # a request, ``operation`` the job that ran (synthesize, compress-history, ...),
        # ``tenant`` the API key's tenant (bounded: the configured ones, "default"
        # without keys, "none" before one is known). None is a label Prometheus or its
        # Operator sets on the target (job, instance, namespace, pod, service, container,
        # endpoint): those would be renamed exported_* when scraped.
        self.requests = Counter(
            "contextsynth_requests", "HTTP requests handled.",
            ["route", "mode", "status", "tenant"], registry=registry)
        self.duration = Histogram(
            "contextsynth_request_duration_seconds", "Time to handle a request.",
            ["route", "mode"], buckets=LATENCY_BUCKETS, registry=registry)
        self.in_flight = Gauge(
            "contextsynth_requests_in_flight", "Requests being handled now, a streamed "
            "answer until its last chunk.", ["route"], registry=registry,
            multiprocess_mode="livesum")
        self.tokens = Counter(
            "contextsynth_tokens", "Tokens in requests and responses.",
            ["operation", "tenant", "direction"], registry=registry)
        self.compression = Histogram(
            "contextsynth_compression_ratio", "Output tokens divided by input tokens.",
            ["operation"], buckets=RATIO_BUCKETS, registry=registry)
        self.phases = Counter(
            "contextsynth_phase", "Agent phases seen by /synthesize.", ["phase"],
            registry=registry)
        self.llm_requests = Counter(
            "contextsynth_llm_requests", "Calls to LLM providers, retries included.",
            ["provider", "model", "outcome"], registry=registry)
        self.llm_duration = Histogram(
            "contextsynth_llm_duration_seconds", "Time of one LLM call, retries included.",
            ["provider", "model"], buckets=LATENCY_BUCKETS, registry=registry)
        self.llm_tokens = Counter(
            "contextsynth_llm_tokens", "Tokens sent to and received from LLM providers.",
            ["provider", "model", "direction"], registry=registry)
        self.cache_requests = Counter(
            "contextsynth_cache_requests", "Cache lookups by result (hit, miss, error).",
            ["result"], registry=registry)
        self.webhook_deliveries = Counter(
            "contextsynth_webhook_deliveries", "Webhook delivery attempts by outcome.",
            ["event", "outcome"], registry=registry)
        self.webhook_dropped = Counter(
            "contextsynth_webhook_dropped", "Events not queued (outbox full or unreachable).",
            ["event"], registry=registry)
        self.webhook_lost = Counter(
            "contextsynth_webhook_lost", "Events accepted and never to be delivered: the "
            "outbox (Redis) lost them, or the process stopped holding them.", ["reason"],
            registry=registry)
        self.webhook_queue_depth = Gauge(
            "contextsynth_webhook_queue_depth", "Events waiting for delivery or a retry.",
            registry=registry, multiprocess_mode="livemax")
        self.fallbacks = Counter(
            "contextsynth_fallbacks", "Jobs that fell back from an LLM mode.", ["reason"],
            registry=registry)
        # Proxy mode: the model label is the model's tier (bounded), not its name.
        self.proxy_requests = Counter(
            "contextsynth_proxy_requests", "Requests forwarded to an upstream provider, by "
            "what compaction did (compacted, unchanged, off, failed; passed: a path it does "
            "not compact, sent on untouched).",
            ["upstream", "compaction"], registry=registry)
        self.proxy_tokens = Counter(
            "contextsynth_proxy_tokens", "Conversation tokens before and after compaction, "
            "by upstream and tier.", ["upstream", "tier", "direction"],
            registry=registry)
        # Counted where every request is (the middleware), from what the proxy route
        # notes for the access log: a provider that could not be reached answered
        # nothing, and shows as the proxy route's 502 or 504 in contextsynth_requests.
        self.proxy_responses = Counter(
            "contextsynth_proxy_responses", "Answers of upstream providers relayed by the "
            "proxy, by provider and the status it answered.", ["upstream", "status"],
            registry=registry)
        self.proxy_compaction = Histogram(
            "contextsynth_proxy_compaction_seconds", "Time compaction added to a request.",
            ["upstream"], buckets=LATENCY_BUCKETS, registry=registry)
        self.proxy_upstream = Histogram(
            "contextsynth_proxy_upstream_seconds", "Time to the upstream's response headers.",
            ["upstream"], buckets=LATENCY_BUCKETS, registry=registry)
        self.proxy_expansions = Counter(
            "contextsynth_proxy_expansions", "Calls of the expand tool the proxy answered, by "
            "what it found (found, not_found, unavailable).", ["upstream", "result"],
            registry=registry)
        self.proxy_expansion_rounds = Counter(
            "contextsynth_proxy_expansion_rounds", "Extra upstream requests made to answer "
            "the expand tool.", ["upstream"], registry=registry)
        self.proxy_expansion_tokens = Counter(
            "contextsynth_proxy_expansion_tokens", "Tokens the upstream reported for the "
            "rounds that called the expand tool.", ["upstream"], registry=registry)
        # Rate limits: tenants are the configured ones, so the label stays bounded.
        self.rate_limited = Counter(
            "contextsynth_rate_limited", "Requests refused by their tenant's rate limits, "
            "by the limit that refused them (requests_per_minute, tokens_per_minute, "
            "tokens_per_day) and the route.", ["tenant", "limit", "route"],
            registry=registry)
        self.rate_limit_unchecked = Counter(
            "contextsynth_rate_limit_unchecked", "Requests served without their rate limits "
            "checked: the shared store (Redis) failed, and limits fail open.",
            registry=registry)


def add_runtime_collectors(registry: CollectorRegistry) -> None:
    """The process_* and python_* series a default registry has (memory, CPU, open
    files, GC): the app's registry is its own, so they are added to it."""
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
