"""Synthesis modes and the choice ``auto`` makes between them."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from app.engine.compaction.tiers import Tier
from app.engine.reading.phases import Phase


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


CONFIGURE_LLM = ("Configure a provider (CONTEXTSYNTH_LLM_PROVIDERS, see the README's "
                 "configuration table)")


def decide(requested: Mode, *, llm_available: bool) -> ModeDecision:
    """The mode to run, or auto's choice still to make; deep without an LLM is the
    caller's to refuse."""
    if requested is Mode.AUTO:
        if not llm_available:
            return ModeDecision(
                Mode.FAST, "auto chose fast: no LLM provider is configured, so compaction is "
                "deterministic")
        return ModeDecision(Mode.AUTO, "auto decides once the transcript is read")
    return ModeDecision(requested, f"{requested.value} was requested")


@dataclass(frozen=True, slots=True)
class AutoInputs:
    """What ``auto`` weighs once an LLM is available."""

    tier: Tier
    dedicated_model: bool
    older_tokens: int
    threshold: int
    phase: Phase
    recent_errors: bool


def decide_auto(inputs: AutoInputs) -> ModeDecision:
    if inputs.older_tokens == 0:
        return ModeDecision(Mode.FAST, "auto chose fast: nothing is older than the recent "
                            "turns the tier keeps")
    if inputs.tier is Tier.LOCAL and not inputs.dedicated_model:
        return ModeDecision(Mode.FAST, "auto chose fast: local tiers use deep only with a "
                            "dedicated synthesis model (set synthesis_model)")
    if inputs.older_tokens < inputs.threshold:
        return ModeDecision(Mode.FAST, f"auto chose fast: the older part has "
                            f"{inputs.older_tokens} tokens, under the {inputs.threshold}-token "
                            "threshold for deep")
    if inputs.phase is Phase.SYNTHESIZE:
        return ModeDecision(Mode.DEEP, f"auto chose deep: {inputs.older_tokens} older tokens "
                            "and the agent is about to synthesize its answer")
    if inputs.recent_errors:
        return ModeDecision(Mode.DEEP, f"auto chose deep: {inputs.older_tokens} older tokens "
                            "and recent errors to learn from")
    return ModeDecision(Mode.FAST, f"auto chose fast: the older part is large but the phase "
                        f"is {inputs.phase.value} with no recent errors")
