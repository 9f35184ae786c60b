"""One eval: the corpus and the planted runs, through the chosen compactors."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from app.corpus import Run, load, runs
from app.engine.compaction.tiers import Tier
from app.engine.transcript.tokens import Encoder
from app.evaluation import errors, needed, planted
from app.evaluation.compactors import Compactor, Engine, JobCaller, Service, compactors
from app.evaluation.replay import Scorer, sample_steps
from app.evaluation.scores import Tally
from app.evaluation.seen import Seen

Progress = Callable[[str], None]


@dataclass(frozen=True)
class EvalOptions:
    directory: Path | None = None  # default: the repository's corpus
    files: Sequence[str] = ()  # names (or name prefixes) to keep; empty: every file
    split: str | None = None  # "tune" or "test": that split's families only
    families: Sequence[str] = ()  # family names to keep; empty: every family
    steps: int | None = None  # calls per transcript; None: before every assistant step
    tier: Tier = Tier.MID  # for the compactors that take one besides synthesize-fast-*
    url: str | None = None  # a running service instead of the engine in process
    planted_runs: int = 8
    only: Sequence[str] = ()  # compactor names to run; empty: all
    parts: bool = False  # also score where each output's tokens and needed facts are


def to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Evaluation:
    """Each compactor's tallies over everything, and per run (for the families' table
    and the most a single run costs)."""

    total: dict[str, Tally]
    runs: list[tuple[Run, dict[str, Tally]]]


def _runs(options: EvalOptions) -> list[Run]:
    chosen = runs(options.directory, options.split, options.families)
    if options.files:
        chosen = [r for r in chosen if any(r.path.name.startswith(p) for p in options.files)]
    if not chosen:
        raise ValueError("no transcript matches the --split, --family and --file given")
    return chosen


def _chosen(runner: JobCaller, options: EvalOptions) -> list[Compactor]:
    every = compactors(runner, options.tier)
    if not options.only:
        return list(every.values())
    unknown = [name for name in options.only if name not in every]
    if unknown:
        raise ValueError(f"unknown compactors: {', '.join(unknown)}; choose from "
                         f"{', '.join(every)}")
    # "none" is the baseline every cost is a share of: always measured.
    return [every[name] for name in every if name in options.only or name == "none"]


def evaluate(options: EvalOptions, encoder: Encoder,
             progress: Progress = to_stderr) -> Evaluation:
    """Scores per compactor name, in total and per run."""
    service = Service(options.url) if options.url else None
    runner: JobCaller = service if service is not None else Engine(encoder)
    try:
        chosen = _chosen(runner, options)
        tallies = {c.name: Tally() for c in chosen}
        scorer = Scorer(Seen(encoder), needed.TokenSets(), errors.Failures(),
                        parts=options.parts)
        chosen_runs = _runs(options)
        per_run: list[tuple[Run, dict[str, Tally]]] = []
        for n, run in enumerate(chosen_runs, 1):
            messages = load(run.path)
            steps = sample_steps(messages, options.steps)
            progress(f"[{n}/{len(chosen_runs)}] {run.path.name}: {len(steps)} calls x "
                     f"{len(chosen)} compactors")
            own = {c.name: Tally() for c in chosen}
            scorer.replay(messages, steps, chosen, own)
            for name, tally in own.items():
                tallies[name].absorb(tally)
            per_run.append((run, own))
        synthetic = planted.runs(options.planted_runs)
        progress(f"planted facts: {len(synthetic)} synthetic runs")
        for one in synthetic:
            for compactor in chosen:
                scorer.planted(one, compactor, tallies[compactor.name])
        return Evaluation(tallies, per_run)
    finally:
        if service is not None:
            service.close()
