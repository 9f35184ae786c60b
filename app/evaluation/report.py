"""The eval's table, its JSON and its plot."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from app.evaluation.planted import KINDS
from app.evaluation.scores import Tally

PLOT_EXTRA = ('the plot needs matplotlib: pip install "contextsynth[eval]" '
              "(or: pip install matplotlib)")


def summaries(tallies: Mapping[str, Tally]) -> dict[str, dict[str, Any]]:
    baseline = tallies.get("none")
    return {name: tally.summary(baseline) for name, tally in tallies.items()}


def table(rows: Mapping[str, Mapping[str, Any]]) -> str:
    header = (f"{'compactor':26} {'calls':>6} {'reduction':>9} {'recall':>7} {'+expand':>8} "
              f"{'planted':>8} {'errors':>7} {'reuse':>6} {'cost oai':>8} {'cost ant':>8} "
              f"{'ms/call':>8}")
    lines = [header, "-" * len(header)]
    for name, r in rows.items():
        errors = f"{r['error_retention']:>6.1%}" if r["errors_cut"] else f"{'-':>6}"
        lines.append(
            f"{name:26} {r['calls']:>6} {r['reduction']:>8.1%} {r['recall']:>6.1%} "
            f"{r['recall_with_expand']:>7.1%} {r['planted_survival']:>7.1%} {errors} "
            f"{r['prefix_reuse']:>5.1%} "
            f"{r['cost']['openai']:>7.1%} {r['cost']['anthropic']:>7.1%} "
            f"{r['ms_per_call']:>8.2f}")
    lines.append("-" * len(header))
    lines.append("reduction, recall, errors and reuse over every replayed call; +expand: "
                 "recall counting what is behind the handles the output shows (the most an "
                 "agent with the expand tool can reach); planted: "
                 "facts kept at every step of the synthetic runs once all are planted; "
                 "cost: with prompt caching, as a share of sending everything (OpenAI and "
                 "Anthropic pricing)")
    return "\n".join(lines)


def planted_table(rows: Mapping[str, Mapping[str, Any]]) -> str:
    short = {k: k.split()[0][:8] for k in KINDS}
    header = f"{'compactor':26} {'reduction':>9} " + " ".join(f"{short[k]:>8}" for k in KINDS)
    lines = [header, "-" * len(header)]
    for name, r in rows.items():
        kinds = r["planted_by_kind"]
        lines.append(f"{name:26} {r['planted_reduction']:>8.1%} "
                     + " ".join(f"{kinds[k]:>7.0%} " for k in KINDS))
    lines.append("kinds: " + ", ".join(f"{short[k]} = {k}" for k in KINDS))
    return "\n".join(lines)


def write_json(rows: Mapping[str, Mapping[str, Any]], options: Mapping[str, Any],
               path: Path, families: Mapping[str, Mapping[str, Any]] | None = None) -> None:
    body = {"options": options, "compactors": rows, "families": dict(families or {})}
    path.write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")


def plot(rows: Mapping[str, Mapping[str, Any]], path: Path) -> None:
    """Recall against reduction: each compactor a point, the keep-last-N baselines joined
    as a line, so a mode above the line keeps more than a plain window at its size."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise RuntimeError(PLOT_EXTRA) from None
    figure, axes = plt.subplots(figsize=(8, 6))
    window = sorted(((r["reduction"], r["recall"], name) for name, r in rows.items()
                     if name.startswith("keep-last-") or name == "none"))
    axes.plot([w[0] for w in window], [w[1] for w in window], "-o", color="grey",
              label="keep-last-N (none at 0)")
    for x, y, name in window:
        axes.annotate(name.removeprefix("keep-last-"), (x, y), textcoords="offset points",
                      xytext=(4, -10), fontsize=8, color="grey")
    for name, r in rows.items():
        if name.startswith("keep-last-") or name == "none":
            continue
        axes.plot(r["reduction"], r["recall"], "s", label=name)
    axes.set_xlabel("token reduction")
    axes.set_ylabel("needed-fact recall")
    axes.set_xlim(0, 1)
    axes.set_ylim(0, 1.02)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8, loc="lower left")
    axes.set_title("contextsynth eval: what compaction keeps against what it cuts")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
