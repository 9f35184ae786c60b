"""Service configuration, read from ``CONTEXTSYNTH_*`` environment variables.

No instance is made at import time: ``create_app`` and the CLI build one.
"""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from app.adapters.events import RETRY_SCHEDULE_S, WebhookConfig
from app.adapters.llm.config import ProviderConfig
from app.engine.compaction.tiers import Tier
from app.engine.jobs.trace.summarizer import TraceOptions
from app.service.origins import normalized
from app.service.rate_limits import TenantLimits
from app.service.server_keys import DEFAULT_ROUTES, parse_route


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CONTEXTSYNTH_", extra="ignore")

    host: str = Field("0.0.0.0", description="Address `contextsynth serve` binds to.")
    port: int = Field(8080, ge=1, le=65535, description="Port `contextsynth serve` listens on.")
    workers: int = Field(1, ge=1, le=64, description="uvicorn worker processes.")
    body_timeout_s: float = Field(30.0, gt=0, description="A request body that has not "
                                  "fully arrived after this many seconds gets a 408.")
    header_timeout_s: float = Field(10.0, gt=0, description="A connection whose request "
                                    "headers take longer than this is closed.")
    bench_echo: bool = Field(False, description="Mount POST /bench/echo, which returns the "
                             "body as sent: the ceiling `contextsynth bench --load` measures "
                             "the jobs against. Not for production.")
    keep_alive_s: float = Field(5.0, gt=0, description="An idle keep-alive connection is "
                                "closed after this many seconds.")
    max_body_bytes: int = Field(16 * 1024 * 1024, ge=1024,
                                description="Largest request body accepted (413 above).")
    memory_limit_bytes: int | None = Field(
        None, ge=64 << 20, description="Memory this worker may use; unset: the container's "
        "cgroup limit, if any. It sizes the caches (3/8 of it, unless "
        "cache_memory_bytes says) and bounds, in what is left, the largest body (about 16 "
        "bytes of memory per byte of body) and how many large requests run at once.")
    large_requests: int | None = Field(
        None, ge=1, description="Requests over offload_chars running at once per worker "
        "(others wait up to large_request_wait_s, then 503); unset: as many of the largest "
        "as fit the memory limit, or 4 without one.")
    large_request_wait_s: float = Field(30.0, gt=0, description="Longest wait of a large "
                                        "request for its turn (then 503).")
    max_json_depth: int = Field(64, ge=8, le=256, description="Deepest nesting of lists "
                                "and objects in a request body (400 above).")
    max_messages: int = Field(5000, ge=1, description="Most messages in one request (413 above).")
    max_message_chars: int = Field(2_000_000, ge=1,
                                   description="Largest single message, and largest single "
                                   "text of any job (a memory, a tool output), in characters "
                                   "(413 above).")
    # Each item of a list costs every step of its job a little, on the event loop when the
    # body is small: a list's length, not only its bytes, bounds how long a request can
    # keep other requests waiting (100,000 short actions held /healthz for 7 s).
    max_trace_actions: int = Field(
        1000, ge=1, description="/summarize-trace: most actions in one request, in "
        "'actions' or as 'Action:' lines of a 'scratchpad' (413 above).")
    max_reflect_calls: int = Field(
        1000, ge=1, description="/reflect: most tool calls of the iteration, and of each "
        "earlier record in 'history' (413 above).")
    max_reflect_history: int = Field(
        100, ge=1, description="/reflect: most earlier records in 'history' (413 above).")
    max_reflect_history_calls: int = Field(
        10_000, ge=1, description="/reflect: most tool calls in all the earlier records "
        "together (413 above).")
    max_recall_memories: int = Field(
        1000, ge=1, description="/summarize-recall: most memories in one request "
        "(413 above).")
    token_encoding: str = Field("cl100k_base", description="tiktoken encoding used for counts.")
    cache_memory_bytes: int | None = Field(
        None, ge=16 << 20, description="Bytes every cache of this worker holds together, "
        "measured: recent request bodies (a body resending their messages is parsed only "
        "past them), the engine's memos of each conversation (summaries, notes, token "
        "counts) and, without Redis, the in-process cache; each has a fixed share and "
        "lets go of what was used longest ago. Unset: 3/8 of the worker's memory "
        "limit, or 512 MiB without one.")
    default_tier: Tier = Field(Tier.MID, description="Tier when neither request nor model says.")
    proxy_openai_url: str = Field(
        "https://api.openai.com/v1", description="Proxy mode: where /v1/chat/completions "
        "is forwarded (any OpenAI-compatible server: vLLM, Ollama, ...), as an OpenAI SDK's "
        "base URL; one with no path (http://host:8000) gets /v1.")
    proxy_anthropic_url: str = Field(
        "https://api.anthropic.com", description="Proxy mode: where /v1/messages is "
        "forwarded.")
    proxy_gemini_url: str = Field(
        "https://generativelanguage.googleapis.com", description="Proxy mode: where "
        "Gemini's models/{model}:generateContent and :streamGenerateContent (under /v1beta "
        "or /v1) are forwarded, with the rest of /v1beta.")
    proxy_mode: Literal["off", "fast", "auto", "deep"] = Field(
        "fast", description="Proxy mode: how conversations are compacted unless a request's "
        "x-contextsynth-mode header says otherwise (off forwards them untouched).")
    proxy_expand_tool: bool = Field(
        True, description="Proxy mode: offer the model a tool (contextsynth_expand) that "
        "reads back what compaction cut, answered by the proxy itself, on requests that were "
        "compacted (streamed too; x-contextsynth-expand: off turns it off for one).")
    proxy_expand_rounds: int = Field(
        3, ge=1, le=10, description="Proxy mode: upstream requests made at most to answer "
        "the expand tool, per request; past them the model's last answer is passed on.")
    proxy_expand_max_chars: int = Field(
        20_000, ge=1_000, description="Proxy mode: characters of one expand tool result "
        "(longer ones say how to ask for the rest).")
    proxy_tenant_keys: dict[str, dict[str, str]] = Field(
        default_factory=dict, description="Proxy mode: tenant -> {upstream (openai, "
        "anthropic, gemini): name of the environment variable holding that tenant's "
        "provider key}. A tenant listed here is forwarded with the server's key, not the "
        "caller's.")
    proxy_server_key_routes: list[str] = Field(
        default_factory=lambda: list(DEFAULT_ROUTES), description="Proxy mode: the "
        "requests passed through untouched (not compacted) that may go upstream with a "
        "tenant's server-side key, as 'METHOD /path' with * for one path segment; on a "
        "server key any other pass-through request is refused with a 403. The default: "
        "the model lists and token counts.")
    proxy_tenant_models: dict[str, list[str]] = Field(
        default_factory=dict, description="Proxy mode: tenant -> the models it may ask for "
        "with its server-side key (patterns such as 'gpt-4.1*'); a tenant not listed may "
        "ask for any.")
    proxy_timeout_s: float = Field(600.0, gt=0, description="Proxy mode: time for the "
                                   "upstream's answer (a stream: between its chunks).")
    proxy_max_connections: int = Field(
        500, ge=1, description="Proxy mode: upstream requests in flight per worker; a "
        "stream holds its connection for as long as it runs.")
    proxy_queue: int = Field(
        500, ge=0, description="Proxy mode: requests that may wait for a connection when "
        "all are in use; past it, a 503 with Retry-After in the provider's error shape.")
    proxy_queue_timeout_s: float = Field(
        10.0, gt=0, description="Proxy mode: longest wait for a connection (then the 503).")
    # A worker thread costs a tenth of a typical request's time and, the engine holding
    # the GIL, frees the event loop only in part: only requests whose cold call takes
    # tens of milliseconds go there (bench --replay measured 64,000: 12% slower).
    offload_chars: int = Field(
        1_000_000, ge=0,
        description="Requests larger than this (a body of more bytes, or a job "
        "reading more characters) run in a worker thread, off the event loop: the "
        "validation of the body against its schema, and the engine's work.")
    # A request allocates thousands of containers and the caches hold millions of
    # long-lived objects: at Python's default (700) the collector walked the whole heap
    # every few hundred requests (see app/adapters/collector.py).
    gc_young_threshold: int = Field(
        10_000, ge=0, description="`contextsynth serve`: new container objects between two "
        "young garbage collections; what exists at start-up is frozen out of collections. "
        "0: Python's defaults.")
    malloc_mmap_threshold_bytes: int = Field(
        131_072, ge=0, description="`contextsynth serve` on glibc: blocks this large or "
        "larger are returned to the system when freed, so one large request does not "
        "leave the worker's memory high. 0: glibc's own (adaptive) threshold.")
    log_level: str = Field("info", description="Log level of the service and uvicorn.")
    log_format: Literal["json", "text"] = Field(
        "json", description="Log lines as JSON objects (one per line), or text for a terminal.")
    redis_url: str | None = Field(
        None, description="redis://host:6379/0 to cache in Redis (shared by replicas); "
        "unset: an in-process cache.")
    redis_cluster: bool = Field(False, description="The Redis URL points at a Redis Cluster.")
    redis_timeout_s: float = Field(0.5, gt=0, description="Per Redis command; past it the "
                                   "request carries on uncached.")
    redis_pause_s: float = Field(2.0, gt=0, description="After a Redis error, requests skip "
                                 "the cache while a watcher looks this often whether it is "
                                 "back (and whether it lost its data); the event outbox "
                                 "waits this long before trying again.")
    memory_cache_entries: int = Field(1_000_000, ge=0, description="Entries of the "
                                      "in-process cache (used without Redis).")
    memory_cache_bytes: int | None = Field(
        None, ge=1 << 20, description="Bytes of keys and values the in-process cache holds "
        "(LLM answers and every expand handle), the least recently used going first; unset: "
        "its share (15%) of cache_memory_bytes.")
    cache_ttl_s: float = Field(86_400, gt=0, description="How long LLM results are cached.")
    recall_cache_ttl_s: float = Field(3_600, gt=0, description="How long /summarize-recall "
                                      "answers are cached.")
    expand_ttl_s: float = Field(3_600, gt=0, description="How long /expand handles live.")
    api_keys: dict[str, str] = Field(
        default_factory=dict, description="JSON object: sha256 hex of an API key -> tenant "
        "(`contextsynth hash-key KEY` prints the hash). Empty: no keys, one tenant.")
    mcp_allowed_origins: list[str] = Field(
        default_factory=list, description="JSON list of web origins (scheme://host[:port]) "
        "whose pages may call /mcp, beside pages on localhost, 127.0.0.1 and [::1]; a "
        "request with any other Origin header gets a 403. Requests without Origin (every "
        "client but a browser) are not affected.")
    rate_limits: dict[str, TenantLimits] = Field(
        default_factory=dict, description="JSON object: tenant -> {requests_per_minute, "
        "tokens_per_minute, tokens_per_day}, each optional (left out: no limit). A tenant "
        "listed here has exactly these limits; every other one has rate_limit_default. "
        "Shared by every replica through Redis when redis_url is set.")
    rate_limit_default: TenantLimits | None = Field(
        None, description="JSON object: the limits of a tenant rate_limits does not list "
        "(the one tenant, default, without API keys). Unset: no limits.")
    webhooks: list[WebhookConfig] = Field(
        default_factory=list, description="JSON list of {url, secret, events}: where signed "
        "events go.")
    webhooks_allow_private: bool = Field(False, description="Allow webhook URLs on private "
                                         "or loopback addresses.")
    webhook_retry_schedule_s: list[float] = Field(
        default_factory=lambda: list(RETRY_SCHEDULE_S),
        description="Delays before each retry; after the last, events are dead-lettered.")
    webhook_timeout_s: float = Field(10.0, gt=0, description="Per delivery attempt.")
    webhook_concurrency: int = Field(32, ge=1, le=256, description="Deliveries in flight "
                                     "at once per endpoint; a slow endpoint holds only its "
                                     "own.")
    webhook_drain_s: float = Field(5.0, ge=0, description="On shutdown, time to deliver "
                                   "what is queued.")
    outbox_max_entries: int = Field(10_000, ge=1, description="Events held in memory: the "
                                    "outbox without Redis, and with Redis the events waiting "
                                    "for it and those a process remembers until delivered; "
                                    "past it events are dropped, counted.")
    outbox_claim_idle_s: float = Field(60.0, gt=0, description="With Redis: an event read "
                                       "but not delivered this long is claimed by another "
                                       "replica.")
    llm_providers: list[ProviderConfig] = Field(
        default_factory=list,
        description="JSON list of providers; the first is the default. Empty: no LLM.")
    llm_budget_s: float = Field(25.0, gt=0, description="Time for one LLM call, retries "
                                "included (504 or a fallback past it). An agent waits this "
                                "long at most for a hung model; a slow local model may need "
                                "more.")
    llm_retries: int = Field(3, ge=1, le=10, description="Attempts per LLM call.")
    llm_allowed_models: list[str] = Field(
        default_factory=list, description="Models a request may name in synthesis_model, "
        "beside each provider's model and the synthesis model (a request naming another "
        "gets a 422: it would spend the operator's key).")
    synthesis_model: str | None = Field(
        None, description="A dedicated (small, cheap) model for summaries; auto uses deep on "
        "local tiers only when one is set.")
    history_trigger_messages: int = Field(
        50, ge=1, description="/compress-history compresses above this many messages.")
    history_keep_last_n: int = Field(
        10, ge=0, description="/compress-history keeps this many recent messages verbatim.")
    trace_trigger: int = Field(10, ge=1, description="/summarize-trace: actions before it "
                               "summarizes.")
    trace_keep: int = Field(5, ge=0, description="/summarize-trace: recent actions kept.")
    trace_observation_chars: int = Field(1000, ge=50, description="/summarize-trace: "
                                         "observations of kept actions are cut to this.")
    trace_large_chars: int = Field(30_000, ge=1000, description="/summarize-trace: a trace "
                                   "over this many characters is large...")
    trace_large_trigger: int = Field(5, ge=1, description="...and uses this trigger...")
    trace_large_keep: int = Field(3, ge=0, description="...and keeps this many actions.")
    trace_min_llm_chars: int = Field(2000, ge=0, description="/summarize-trace: no LLM call "
                                     "for traces under this size.")
    trace_min_saving: float = Field(0.10, ge=0, le=0.9, description="/summarize-trace: a "
                                    "summary saving less than this share falls back to "
                                    "truncation.")
    rescue_evidence_chars: int = Field(
        80_000, ge=1000, description="/rescue: evidence past this many characters is "
        "compacted to fit the synthesis model's window.")
    rescue_max_tokens: int = Field(1500, ge=16, description="/rescue: longest answer.")
    budget_share: float | None = Field(
        0.8, gt=0, le=1, description="/synthesize and the proxy: without a budget in the "
        "request, the output is capped at this share of the model's context window, for "
        "models whose window is known (the rest of the window is the model's answer's). "
        "Unset: no cap.")
    deep_threshold_tokens: int = Field(
        4000, ge=0, description="auto uses deep when the older part has at least this many "
        "tokens (and the phase is synthesize or errors are recent).")

    @field_validator("proxy_server_key_routes")
    @classmethod
    def _routes_read(cls, routes: list[str]) -> list[str]:
        for route in routes:
            parse_route(route)  # a ValueError says how to write one
        return routes

    @field_validator("mcp_allowed_origins")
    @classmethod
    def _origins_read(cls, origins: list[str]) -> list[str]:
        return [normalized(origin) for origin in origins]  # a ValueError says how to write one

    @field_validator("proxy_openai_url")
    @classmethod
    def _openai_base(cls, url: str) -> str:
        # The proxy appends /chat/completions to this, as the OpenAI SDKs append it to their
        # base URL, which ends in /v1; given only a server's address, that was a 404. A URL
        # with a path of its own (/v1, /openai/v1, /v1beta/openai) is the provider's and is
        # used as it is.
        base = url.rstrip("/")
        return f"{base}/v1" if urlsplit(base).path == "" else base

    def trace_options(self) -> TraceOptions:
        """The /summarize-trace thresholds a request leaves out."""
        return TraceOptions(self.trace_trigger, self.trace_keep, self.trace_observation_chars,
                            self.trace_large_chars, self.trace_large_trigger,
                            self.trace_large_keep, self.trace_min_llm_chars,
                            self.trace_min_saving)
