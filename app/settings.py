"""Service configuration, read from ``CONTEXTSYNTH_*`` environment variables.

No instance is made at import time: ``create_app`` and the CLI build one.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from app.engine.tiers import Tier
from app.llm.config import ProviderConfig


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CONTEXTSYNTH_", extra="ignore")

    host: str = Field("0.0.0.0", description="Address `contextsynth serve` binds to.")
    port: int = Field(8080, ge=1, le=65535, description="Port `contextsynth serve` listens on.")
    workers: int = Field(1, ge=1, le=64, description="uvicorn worker processes.")
    max_body_bytes: int = Field(16 * 1024 * 1024, ge=1024,
                                description="Largest request body accepted (413 above).")
    max_messages: int = Field(5000, ge=1, description="Most messages in one request (422 above).")
    max_message_chars: int = Field(2_000_000, ge=1,
                                   description="Largest single message, in characters.")
    token_encoding: str = Field("cl100k_base", description="tiktoken encoding used for counts.")
    token_cache_chars: int = Field(64_000_000, ge=0,
                                   description="Characters of content whose counts are cached.")
    default_tier: Tier = Field(Tier.MID, description="Tier when neither request nor model says.")
    offload_chars: int = Field(
        64_000, ge=0,
        description="Requests larger than this run in a worker thread, off the event loop.")
    log_level: str = Field("info", description="uvicorn log level.")
    llm_providers: list[ProviderConfig] = Field(
        default_factory=list,
        description="JSON list of providers; the first is the default. Empty: no LLM.")
    llm_budget_s: float = Field(120.0, gt=0, description="Time for one LLM call, retries "
                                "included (504 or a fallback past it).")
    llm_retries: int = Field(3, ge=1, le=10, description="Attempts per LLM call.")
    synthesis_model: str | None = Field(
        None, description="A dedicated (small, cheap) model for summaries; auto uses deep on "
        "local tiers only when one is set.")
    history_trigger_messages: int = Field(
        50, ge=1, description="/compress-history compresses above this many messages.")
    history_keep_last_n: int = Field(
        10, ge=0, description="/compress-history keeps this many recent messages verbatim.")
    deep_threshold_tokens: int = Field(
        4000, ge=0, description="auto uses deep when the older part has at least this many "
        "tokens (and the phase is synthesize or errors are recent).")
