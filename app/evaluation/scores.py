"""The scores of one compactor, added up call by call.

Token reduction, needed-fact recall, error retention and prefix reuse are
pooled over every call (a sum over a sum), so long runs weigh what they cost.
Cost under prompt caching prices each call's reused prefix at the cached rate
and the rest at full price, under two pricing models, and is reported as a
share of the ``none`` compactor's cost.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.evaluation.parts import PartTally
from app.evaluation.planted import KINDS


@dataclass(frozen=True)
class Pricing:
    """Prices per token, relative to an uncached input token."""

    name: str
    cached: float
    uncached: float

    def cost(self, sent: int, reused: int) -> float:
        return self.cached * reused + self.uncached * (sent - reused)


# OpenAI bills cached prefixes at a tenth and nothing extra for writing them;
# Anthropic bills cache reads at a tenth and cache writes at 1.25x.
PRICINGS = (Pricing("openai", 0.1, 1.0), Pricing("anthropic", 0.1, 1.25))


def share(part: float, whole: float, empty: float = 1.0) -> float:
    return part / whole if whole else empty


@dataclass
class Tally:
    """Everything one compactor scored, summed over calls."""

    calls: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    needed: int = 0
    found: int = 0
    found_expanded: int = 0  # in the output, or behind a handle it shows
    errors_cut: int = 0
    errors_kept: int = 0
    reused: int = 0
    seconds: float = 0.0
    cost: dict[str, float] = field(default_factory=lambda: dict.fromkeys(
        (p.name for p in PRICINGS), 0.0))
    planted: dict[str, list[int]] = field(default_factory=lambda: {k: [0, 0] for k in KINDS})
    planted_before: int = 0
    planted_after: int = 0
    parts: dict[str, PartTally] = field(default_factory=dict)  # filled when asked for

    def add_call(self, before: int, after: int, reused: int, seconds: float) -> None:
        self.calls += 1
        self.tokens_before += before
        self.tokens_after += after
        self.reused += reused
        self.seconds += seconds
        for p in PRICINGS:
            self.cost[p.name] += p.cost(after, reused)

    def absorb(self, other: Tally) -> None:
        """Add ``other``'s counts to these (a run's tallies into its family's)."""
        for name in ("calls", "tokens_before", "tokens_after", "needed", "found",
                     "found_expanded", "errors_cut", "errors_kept", "reused", "seconds",
                     "planted_before", "planted_after"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for pricing, value in other.cost.items():
            self.cost[pricing] += value
        for kind, (kept, total) in other.planted.items():
            self.planted[kind][0] += kept
            self.planted[kind][1] += total
        for part, counts in other.parts.items():
            mine = self.parts.setdefault(part, PartTally())
            mine.tokens += counts.tokens
            mine.holds += counts.holds
            mine.only += counts.only

    @property
    def reduction(self) -> float:
        return 1 - share(self.tokens_after, self.tokens_before)

    @property
    def recall(self) -> float:
        return share(self.found, self.needed)

    @property
    def recall_with_expand(self) -> float:
        """Recall for an agent that expands every handle it is shown: the ceiling the
        expand tool can reach."""
        return share(self.found_expanded, self.needed)

    @property
    def error_retention(self) -> float:
        return share(self.errors_kept, self.errors_cut)

    @property
    def prefix_reuse(self) -> float:
        return share(self.reused, self.tokens_after, 0.0)

    @property
    def planted_survival(self) -> float:
        kept = sum(k for k, _ in self.planted.values())
        return share(kept, sum(n for _, n in self.planted.values()))

    def planted_by_kind(self) -> dict[str, float]:
        return {kind: share(kept, total) for kind, (kept, total) in self.planted.items()}

    @property
    def planted_reduction(self) -> float:
        return 1 - share(self.planted_after, self.planted_before)

    @property
    def ms_per_call(self) -> float:
        return 1000 * share(self.seconds, self.calls, 0.0)

    def summary(self, baseline: Tally | None) -> dict[str, Any]:
        """The scores, with costs as a share of ``baseline`` (the ``none`` compactor)."""
        return {
            "calls": self.calls, "reduction": self.reduction, "recall": self.recall,
            "recall_with_expand": self.recall_with_expand,
            "needed": self.needed, "error_retention": self.error_retention,
            "errors_cut": self.errors_cut, "prefix_reuse": self.prefix_reuse,
            "cost": {name: share(value, baseline.cost[name]) if baseline else 1.0
                     for name, value in self.cost.items()},
            "planted_survival": self.planted_survival,
            "planted_by_kind": self.planted_by_kind(),
            "planted_reduction": self.planted_reduction,
            "ms_per_call": self.ms_per_call,
        }
