"""Resolving a ``.withReasoning({...})`` config: per strategy, then top level, then default."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from app.engine.jobs.synthesize.modes import Mode

STRATEGIES = ("reactive", "planExecute", "treeOfThought", "reflexion", "adaptive")
# Adaptive switches strategies as it goes, so no single bundle can speak for it.
NO_BUNDLE = frozenset({"adaptive"})

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Bundle:
    """What a request says about synthesis, at the top level or for one agent strategy."""

    synthesis: Mode | None = None
    synthesis_model: str | None = None
    synthesis_provider: str | None = None
    synthesis_temperature: float | None = None
    synthesis_strategy: str | None = None


@dataclass(frozen=True, slots=True)
class Resolved(Generic[T]):
    value: T
    source: str  # "strategies.<name>" | "top-level" | "default"


@dataclass(frozen=True, slots=True)
class ResolvedReasoning:
    """Each field as resolved, and where it came from; None: given nowhere."""

    synthesis: Resolved[Mode]
    synthesis_model: Resolved[str] | None = None
    synthesis_provider: Resolved[str] | None = None
    synthesis_temperature: Resolved[float] | None = None
    synthesis_strategy: Resolved[str] | None = None

    def given(self) -> dict[str, Resolved[Mode] | Resolved[str] | Resolved[float]]:
        """The fields that resolved to a value, by their request names."""
        fields = {"synthesis": self.synthesis, "synthesis_model": self.synthesis_model,
                  "synthesis_provider": self.synthesis_provider,
                  "synthesis_temperature": self.synthesis_temperature,
                  "synthesis_strategy": self.synthesis_strategy}
        return {name: field for name, field in fields.items() if field is not None}


def resolve(top: Bundle, per_strategy: Mapping[str, Bundle], strategy: str) -> ResolvedReasoning:
    bundle = Bundle() if strategy in NO_BUNDLE else per_strategy.get(strategy, Bundle())
    own = f"strategies.{strategy}"

    def pick(mine: T | None, given: T | None) -> Resolved[T] | None:
        if mine is not None:
            return Resolved(mine, own)
        return Resolved(given, "top-level") if given is not None else None

    return ResolvedReasoning(
        pick(bundle.synthesis, top.synthesis) or Resolved(Mode.AUTO, "default"),
        pick(bundle.synthesis_model, top.synthesis_model),
        pick(bundle.synthesis_provider, top.synthesis_provider),
        pick(bundle.synthesis_temperature, top.synthesis_temperature),
        pick(bundle.synthesis_strategy, top.synthesis_strategy))
