"""Resolving a ``.withReasoning({...})`` config: per strategy, then top level, then default."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

STRATEGIES = ("reactive", "planExecute", "treeOfThought", "reflexion", "adaptive")
FIELDS = ("synthesis", "synthesis_model", "synthesis_provider", "synthesis_temperature",
          "synthesis_strategy")
DEFAULTS: Mapping[str, Any] = {"synthesis": "auto"}
# Adaptive switches strategies as it goes, so no single bundle can speak for it.
NO_BUNDLE = frozenset({"adaptive"})


@dataclass(frozen=True, slots=True)
class Resolved:
    value: Any
    source: str  # "strategies.<name>" | "top-level" | "default"


def resolve(
    top: Mapping[str, Any],
    per_strategy: Mapping[str, Mapping[str, Any]],
    strategy: str,
) -> dict[str, Resolved]:
    bundle = {} if strategy in NO_BUNDLE else per_strategy.get(strategy, {})
    out: dict[str, Resolved] = {}
    for name in FIELDS:
        if bundle.get(name) is not None:
            out[name] = Resolved(bundle[name], f"strategies.{strategy}")
        elif top.get(name) is not None:
            out[name] = Resolved(top[name], "top-level")
        elif name in DEFAULTS:
            out[name] = Resolved(DEFAULTS[name], "default")
    return out
