"""Synthesis modes and the choice ``auto`` makes between them."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from app.engine.errors import LLMNotConfigured


class Mode(StrEnum):
    AUTO = "auto"
    FAST = "fast"
    DEEP = "deep"
    CUSTOM = "custom"
    OFF = "off"


@dataclass(frozen=True, slots=True)
class ModeDecision:
    mode: Mode
    reason: str


NO_LLM_HINT = (
    "Configure a provider (CONTEXTSYNTH_LLM_PROVIDERS, see the README's configuration table) "
    "or ask for mode 'fast', 'custom' or 'off'."
)


def decide(requested: Mode, *, llm_available: bool) -> ModeDecision:
    if requested is Mode.AUTO:
        if not llm_available:
            return ModeDecision(
                Mode.FAST, "auto chose fast: no LLM provider is configured, so compaction is "
                "deterministic")
        return ModeDecision(Mode.FAST, "auto chose fast")
    if requested is Mode.DEEP and not llm_available:
        raise LLMNotConfigured(
            f"mode 'deep' needs an LLM to summarize older turns, and none is configured. "
            f"{NO_LLM_HINT}",
            pointer="/reasoning/synthesis",
        )
    return ModeDecision(requested, f"{requested.value} was requested")
