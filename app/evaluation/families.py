"""Per agent family: one compactor against the keep-last window at the same reduction.

A pooled score hides a family the engine does badly on behind the families it
does well on, so the eval also scores each family alone. The yardstick is the
plain window: the keep-last-N points of the same family (and ``none`` at zero
reduction) joined into a line, read at the compactor's own reduction. A family
whose recall sits at or below that line gains nothing from compaction that
dropping old messages would not give. The most a single run costs, as a share
of sending it whole under prompt caching, shows the short runs where notes cost
more than they save.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from app.corpus import Run
from app.evaluation.compactors import KEEP_LAST
from app.evaluation.scores import PRICINGS, Tally, share


@dataclass(frozen=True)
class FamilyScores:
    family: str
    split: str
    runs: int
    calls: int
    reduction: float
    recall: float
    window_recall: float  # the keep-last line's recall at ``reduction``
    error_retention: float | None  # None when no error was cut
    prefix_reuse: float
    cost: dict[str, float]
    worst_run_cost: dict[str, float]  # the costliest single run, per pricing

    @property
    def margin(self) -> float:
        return self.recall - self.window_recall

    def as_json(self) -> dict[str, Any]:
        return {"split": self.split, "runs": self.runs, "calls": self.calls,
                "reduction": self.reduction, "recall": self.recall,
                "window_recall": self.window_recall, "margin": self.margin,
                "error_retention": self.error_retention, "prefix_reuse": self.prefix_reuse,
                "cost": self.cost, "worst_run_cost": self.worst_run_cost}


def window_line(points: Sequence[tuple[float, float]], reduction: float) -> float:
    """Recall of the window line at ``reduction``: linear between the (reduction,
    recall) points, and along the last segment past the widest cut (the line keeps
    falling as the window narrows), within 0 and 1."""
    line = sorted(points)
    if not line:
        return 0.0
    # Windows wider than a run all keep everything: one point per reduction, the best.
    distinct: list[tuple[float, float]] = []
    for r, recall in line:
        if distinct and r - distinct[-1][0] < 1e-9:
            distinct[-1] = (distinct[-1][0], max(distinct[-1][1], recall))
        else:
            distinct.append((r, recall))
    if len(distinct) == 1 or reduction <= distinct[0][0]:
        return distinct[0][1]
    for (r0, y0), (r1, y1) in pairwise(distinct):
        if reduction <= r1:
            return y0 + (y1 - y0) * (reduction - r0) / (r1 - r0)
    (r0, y0), (r1, y1) = distinct[-2], distinct[-1]
    slope = (y1 - y0) / (r1 - r0)
    return min(1.0, max(0.0, y1 + slope * (reduction - r1)))


def _window_points(tallies: Mapping[str, Tally]) -> list[tuple[float, float]]:
    names = ["none", *(f"keep-last-{n}" for n in KEEP_LAST)]
    return [(tallies[n].reduction, tallies[n].recall) for n in names if n in tallies]


def _run_cost(tallies: Mapping[str, Tally], name: str, pricing: str) -> float:
    return share(tallies[name].cost[pricing], tallies["none"].cost[pricing])


def score_families(per_run: Sequence[tuple[Run, Mapping[str, Tally]]],
                   name: str) -> list[FamilyScores]:
    """``name``'s scores per family, in the order families first appear."""
    grouped: dict[str, list[tuple[Run, Mapping[str, Tally]]]] = {}
    for run, tallies in per_run:
        if name in tallies and "none" in tallies:
            grouped.setdefault(run.family, []).append((run, tallies))
    found = []
    for family, members in grouped.items():
        total: dict[str, Tally] = {}
        for _, tallies in members:
            for compactor, tally in tallies.items():
                total.setdefault(compactor, Tally()).absorb(tally)
        ours, none = total[name], total["none"]
        found.append(FamilyScores(
            family=family, split=members[0][0].split, runs=len(members), calls=ours.calls,
            reduction=ours.reduction, recall=ours.recall,
            window_recall=window_line(_window_points(total), ours.reduction),
            error_retention=ours.error_retention if ours.errors_cut else None,
            prefix_reuse=ours.prefix_reuse,
            cost={p.name: share(ours.cost[p.name], none.cost[p.name]) for p in PRICINGS},
            worst_run_cost={p.name: max(_run_cost(t, name, p.name) for _, t in members)
                            for p in PRICINGS}))
    return found


def families_table(name: str, rows: Sequence[FamilyScores]) -> str:
    header = (f"{'family':22} {'split':>5} {'runs':>4} {'calls':>6} {'reduction':>9} "
              f"{'recall':>7} {'window':>7} {'margin':>7} {'errors':>7} {'reuse':>6} "
              f"{'cost oai':>8} {'cost ant':>8} {'worst oai':>9} {'worst ant':>9}")
    lines = [f"{name}, per agent family", header, "-" * len(header)]
    for r in rows:
        errors = f"{r.error_retention:>6.1%}" if r.error_retention is not None else f"{'-':>6}"
        lines.append(
            f"{r.family:22} {r.split or '-':>5} {r.runs:>4} {r.calls:>6} {r.reduction:>8.1%} "
            f"{r.recall:>6.1%} {r.window_recall:>6.1%} {100 * r.margin:>+6.1f}p {errors} "
            f"{r.prefix_reuse:>5.1%} {r.cost['openai']:>7.1%} {r.cost['anthropic']:>7.1%} "
            f"{r.worst_run_cost['openai']:>8.1%} {r.worst_run_cost['anthropic']:>8.1%}")
    lines.append("-" * len(header))
    lines.append("window: recall of the keep-last-N line (the same family's keep-last-4/8/16/"
                 "32 and none) at this reduction; margin: recall minus window, in points; "
                 "worst: the costliest single run, as a share of sending it whole")
    return "\n".join(lines)
