"""Long sessions: chained real runs, replayed under a token budget.

The corpus holds no single licensed run of 300+ messages that an eval may use, so a long
session here is **several real runs of one agent family chained into one session**, in
the order of their file names: the first run whole (its system prompt, its task, its
turns), then each later run's task as a new user message followed by its turns, its
repeated system prompt left out. Nothing is generated or edited; the session is what an
agent that was given those tasks one after another in one conversation would hold. By
default: the 14 ``mini-swe-agent`` runs (tune split, 2,345 messages) and the 3 ``cline``
runs (test split, 598 messages).

Each session is replayed at ``steps`` calls spread over it, for each budget, through
``synthesize-budget-<b>`` (``fast`` at the tier with ``budget_tokens`` b) and
``keep-fit-<b>`` (the newest whole messages that fit b beside the system prompt and the
task), besides ``none`` (the cost baseline) and ``synthesize-fast-<tier>`` without a
budget (the fixed-shape engine, for reference). A cache serves one call from the call
just before it, so every sampled call is made together with the call before it (the
previous assistant step): prefix reuse and cost under caching are those of consecutive
calls, which calls dozens of steps apart would not measure. The largest output is
counted as the service counts ``budget_tokens``. With ``every_call``, every call of the
session is also replayed one after another, for prefix reuse and cost as a cache meets
the whole loop (24 pairs read them within about 15 points).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.corpus import load, runs
from app.engine.compaction.tiers import Tier
from app.engine.transcript.tokens import Encoder
from app.evaluation import errors, needed
from app.evaluation.compactors import (
    Baseline,
    Compactor,
    Engine,
    JobCaller,
    KeepFit,
    Ours,
    Refused,
    Service,
    WireCounter,
    budgeted,
    our_jobs,
)
from app.evaluation.replay import Scorer, sample_steps
from app.evaluation.run import Progress, to_stderr
from app.evaluation.scores import PRICINGS, Tally, share
from app.evaluation.seen import Seen, Wire, count, shared_prefix

# The families chained by default: the longest runs of one agent on each split, and
# OpenCode's sessions, long of their own (186 to 1,815 messages, one of them compacted
# by its harness eight times), chained as well.
FAMILIES = ("mini-swe-agent", "opencode", "cline")
BUDGETS = (8_000, 32_000, 128_000)
STEPS = 24


@dataclass(frozen=True)
class LongOptions:
    directory: Path | None = None  # default: the repository's corpus
    families: Sequence[str] = ()  # the families to chain; empty: FAMILIES found there
    split: str | None = None  # only the families of this split
    budgets: Sequence[int] = BUDGETS
    steps: int = STEPS  # sampled calls per session, the last always among them
    tier: Tier = Tier.MID
    url: str | None = None  # a running service instead of the engine in process
    every_call: bool = False  # also reuse and cost over every call, one after another


@dataclass(frozen=True)
class Session:
    """One chained session: its family, split, how many runs and the messages."""

    family: str
    split: str
    runs: int
    messages: list[Wire]

    @property
    def name(self) -> str:
        return f"{self.family} x{self.runs}"


def chain(transcripts: Sequence[Sequence[Wire]]) -> list[Wire]:
    """Runs one after another as one session: the first whole, each later one without
    its leading system messages (its task then follows the previous run's last turn as
    a new user message). The messages are the runs' own objects, unchanged."""
    out: list[Wire] = []
    for n, messages in enumerate(transcripts):
        start = 0
        while n and start < len(messages) and messages[start].get("role") == "system":
            start += 1
        out.extend(messages[start:])
    return out


def sessions(directory: Path | None = None, families: Sequence[str] = (),
             split: str | None = None) -> list[Session]:
    """One chained session per family (``families``, or those of FAMILIES found), of
    ``split`` only if given."""
    found = runs(directory, split, families)
    wanted = list(families) or [f for f in FAMILIES if any(r.family == f for r in found)]
    if not wanted:
        raise ValueError(f"no runs of {' or '.join(FAMILIES)} to chain here; name the "
                         "families to chain with --family")
    out = []
    for family in wanted:
        members = sorted((r for r in found if r.family == family), key=lambda r: r.path.name)
        out.append(Session(family, members[0].split, len(members),
                           chain([load(r.path) for r in members])))
    return out


@dataclass
class Scores:
    """One compactor on one session: its tally and what the budget promises."""

    tally: Tally = field(default_factory=Tally)
    largest: int = 0  # the largest output, as the service counts budget_tokens
    largest_seen: int = 0  # the same, as the eval's counter counts it
    over: list[int] = field(default_factory=list)  # calls whose output passed the budget
    refused: list[int] = field(default_factory=list)  # calls the job refused (422)
    every: Tally | None = None  # every call after the one before it (LongOptions.every_call)


@dataclass(frozen=True)
class Row:
    session: str
    budget: int | None  # None: no budget (the reference and ``none``)
    compactor: str
    scores: Scores


def _compactors(runner: JobCaller, counter: WireCounter, options: LongOptions,
                ) -> list[tuple[int | None, Compactor]]:
    fast = f"synthesize-fast-{options.tier.value}"
    out: list[tuple[int | None, Compactor]] = [
        (None, Baseline("none")), (None, Ours(fast, our_jobs(options.tier)[fast], runner))]
    for b in options.budgets:
        name, request = budgeted(b, options.tier)
        out.append((b, Ours(name, request, runner)))
        out.append((b, KeepFit(f"keep-fit-{b}", b, counter)))
    return out


def _pairs(messages: Sequence[Wire], steps: int) -> list[tuple[int | None, int]]:
    """Each sampled call with the call just before it (None for the first step)."""
    every = sample_steps(messages, None)
    before = dict(zip(every[1:], every, strict=False))
    return [(before.get(k), k) for k in sample_steps(messages, steps)]


def replay(session: Session, compactors: Sequence[tuple[int | None, Compactor]],
           steps: int, scorer: Scorer, counter: WireCounter) -> list[Row]:
    """Every sampled call of ``session`` (with the call before it) through every
    compactor."""
    messages = session.messages
    scores = {c.name: Scores() for _, c in compactors}
    made: dict[str, dict[str, list[Wire]]] = {c.name: {} for _, c in compactors}
    for previous, k in _pairs(messages, steps):
        prefix = messages[:k]
        before = count(scorer.seen.prompt(prefix))
        wanted = needed.needed(messages, k, scorer.sets)
        for budget, compactor in compactors:
            own = scores[compactor.name]
            earlier: list[tuple[int, ...]] = []
            if previous is not None:
                try:
                    last = compactor.compact(messages[:previous])
                    made[compactor.name].update(last.behind)
                    earlier = scorer.seen.prompt(last.messages)
                except Refused:
                    pass  # nothing cached: the call below pays in full
            started = time.perf_counter()
            try:
                answer = compactor.compact(prefix)
            except Refused:
                own.refused.append(k)
                continue
            elapsed = time.perf_counter() - started
            out = answer.messages
            made[compactor.name].update(answer.behind)
            sent = scorer.seen.prompt(out)
            own.tally.add_call(before, count(sent), shared_prefix(earlier, sent), elapsed)
            scorer.score(prefix, wanted, out, sent, made[compactor.name], own.tally)
            size = counter(out)
            own.largest = max(own.largest, size)
            own.largest_seen = max(own.largest_seen, count(sent))
            if budget is not None and size > budget:
                own.over.append(k)
    return [Row(session.name, budget, c.name, scores[c.name]) for budget, c in compactors]


def replay_every(session: Session, compactor: Compactor, seen: Seen) -> Tally:
    """Every call of ``session``, one after another, through ``compactor``: the prefix
    each output shares with the output just before it, and the tokens sent. A sample of
    24 pairs of calls reads prefix reuse within about 15 points (each pair that falls on
    a move of the cut takes about 4 from it); every call reads it as a cache meets the
    loop. A call the job refuses is left out, and the next pays in full."""
    tally = Tally()
    messages = session.messages
    earlier: list[tuple[int, ...]] = []
    for k in sample_steps(messages, None):
        prefix = messages[:k]
        started = time.perf_counter()
        try:
            out = compactor.compact(prefix).messages
        except Refused:
            earlier = []
            continue
        elapsed = time.perf_counter() - started
        sent = seen.prompt(out)
        tally.add_call(count(seen.prompt(prefix)), count(sent), shared_prefix(earlier, sent),
                       elapsed)
        earlier = sent
    return tally


@dataclass(frozen=True)
class LongEvaluation:
    sessions: list[Session]
    rows: list[Row]
    raw_tokens: dict[str, int]  # each session's whole, as the service counts it


def evaluate_long(options: LongOptions, encoder: Encoder,
                  progress: Progress = to_stderr) -> LongEvaluation:
    """Each chained session through every compactor, per budget."""
    if not options.budgets or min(options.budgets) <= 0:
        raise ValueError("--budgets takes positive token counts, e.g. 8000,32000,128000")
    if options.steps < 1:
        raise ValueError("--steps takes a positive number of calls")
    service = Service(options.url, timeout=300.0) if options.url else None
    runner: JobCaller = service if service is not None else Engine(encoder)
    counter = WireCounter(encoder)
    try:
        chosen = sessions(options.directory, options.families, options.split)
        rows: list[Row] = []
        raw: dict[str, int] = {}
        for n, session in enumerate(chosen, 1):
            compactors = _compactors(runner, counter, options)
            raw[session.name] = counter(session.messages)
            progress(f"[{n}/{len(chosen)}] {session.name} (chained runs): "
                     f"{len(session.messages)} messages, {raw[session.name]} tokens, "
                     f"{options.steps} calls (each with the call before it) x "
                     f"{len(compactors)} compactors")
            scorer = Scorer(Seen(encoder), needed.TokenSets(), errors.Failures())
            replayed = replay(session, compactors, options.steps, scorer, counter)
            if options.every_call:
                for row, (_, compactor) in zip(replayed, compactors, strict=True):
                    progress(f"  every call: {compactor.name}")
                    row.scores.every = replay_every(session, compactor, scorer.seen)
            rows.extend(replayed)
        return LongEvaluation(chosen, rows, raw)
    finally:
        if service is not None:
            service.close()


def _keep_fit(rows: Sequence[Row], row: Row) -> Row | None:
    return next((r for r in rows if r.session == row.session and r.budget == row.budget
                 and r.compactor.startswith("keep-fit-")), None)


def _none_row(rows: Sequence[Row], row: Row) -> Row:
    return next(r for r in rows if r.session == row.session and r.compactor == "none")


def _none(rows: Sequence[Row], row: Row) -> Tally:
    return _none_row(rows, row).scores.tally


def summary(rows: Sequence[Row], row: Row) -> dict[str, Any]:
    """One row's scores; for a budgeted job, the keep-fit window's recall at the same
    budget and the margin over it."""
    t, none = row.scores.tally, _none(rows, row)
    window = _keep_fit(rows, row) if row.compactor.startswith("synthesize-budget-") else None
    out: dict[str, Any] = {
        "session": row.session, "budget": row.budget, "compactor": row.compactor,
        "calls": t.calls, "largest": row.scores.largest,
        "largest_eval_tokens": row.scores.largest_seen,
        "mean_size": share(t.tokens_after, t.calls, 0.0),
        "over_budget": row.scores.over, "refused": row.scores.refused,
        "reduction": t.reduction, "recall": t.recall,
        "recall_with_expand": t.recall_with_expand,
        "error_retention": t.error_retention if t.errors_cut else None,
        "errors_cut": t.errors_cut, "prefix_reuse": t.prefix_reuse,
        "cost": {p.name: share(t.cost[p.name], none.cost[p.name]) for p in PRICINGS},
        "ms_per_call": t.ms_per_call}
    if window is not None:
        out["window_recall"] = window.scores.tally.recall
        out["margin"] = t.recall - window.scores.tally.recall
    every, none_every = row.scores.every, _none_row(rows, row).scores.every
    if every is not None and none_every is not None:
        out["every_call"] = {
            "calls": every.calls, "mean_size": share(every.tokens_after, every.calls, 0.0),
            "prefix_reuse": every.prefix_reuse,
            "cost": {p.name: share(every.cost[p.name], none_every.cost[p.name])
                     for p in PRICINGS}}
    return out


def long_table(evaluation: LongEvaluation) -> str:
    header = (f"{'session':22} {'budget':>7} {'compactor':26} {'calls':>5} {'largest':>8} "
              f"{'mean':>7} {'recall':>7} {'window':>7} {'margin':>7} {'errors':>7} "
              f"{'reuse':>6} {'cost oai':>8} {'cost ant':>8} {'refused':>7}")
    lines = ["long sessions (chained real runs of one agent family)", header,
             "-" * len(header)]
    for s in evaluation.sessions:
        lines.append(f"{s.name}: {s.runs} runs chained, {len(s.messages)} messages, "
                     f"{evaluation.raw_tokens[s.name]} tokens whole ({s.split} split)")
    lines.append("-" * len(header))
    for row in evaluation.rows:
        r = summary(evaluation.rows, row)
        budget = f"{row.budget:>7}" if row.budget is not None else f"{'-':>7}"
        window = f"{r['window_recall']:>6.1%}" if "window_recall" in r else f"{'':>6}"
        margin = f"{100 * r['margin']:>+6.1f}p" if "margin" in r else f"{'':>7}"
        errs = f"{r['error_retention']:>6.1%}" if r["error_retention"] is not None \
            else f"{'-':>6}"
        over = "!" if r["over_budget"] else " "
        lines.append(
            f"{row.session:22} {budget} {row.compactor:26} {r['calls']:>5} "
            f"{r['largest']:>7}{over} {r['mean_size']:>7.0f} {r['recall']:>6.1%} {window} "
            f"{margin} {errs} {r['prefix_reuse']:>5.1%} {r['cost']['openai']:>7.1%} "
            f"{r['cost']['anthropic']:>7.1%} {len(r['refused']):>7}")
    lines.append("-" * len(header))
    lines.append("largest: the largest output over every call, in the tokens budget_tokens "
                 "counts ('!': past the budget); mean: tokens sent per call; window: recall "
                 "of keep-fit at the same budget; margin: recall minus window, in points; "
                 "reuse and cost: each sampled call after the call just before it, cost as "
                 "a share of sending everything; refused: calls answered 422")
    if any(row.scores.every is not None for row in evaluation.rows):
        lines.extend(["", *_every_table(evaluation)])
    return "\n".join(lines)


def _every_table(evaluation: LongEvaluation) -> list[str]:
    header = (f"{'session':22} {'budget':>7} {'compactor':26} {'calls':>5} {'mean':>7} "
              f"{'reuse':>6} {'cost oai':>8} {'cost ant':>8}")
    lines = ["every call, each after the one before it", header, "-" * len(header)]
    for row in evaluation.rows:
        every = summary(evaluation.rows, row).get("every_call")
        if every is None:
            continue
        budget = f"{row.budget:>7}" if row.budget is not None else f"{'-':>7}"
        lines.append(f"{row.session:22} {budget} {row.compactor:26} {every['calls']:>5} "
                     f"{every['mean_size']:>7.0f} {every['prefix_reuse']:>5.1%} "
                     f"{every['cost']['openai']:>7.1%} {every['cost']['anthropic']:>7.1%}")
    lines.append("-" * len(header))
    lines.append("reuse and cost over every call of the session (the sampled table's are "
                 "over its pairs of calls); cost as a share of sending everything")
    return lines


def long_json(evaluation: LongEvaluation, options: LongOptions) -> dict[str, Any]:
    return {
        "options": {"budgets": list(options.budgets), "steps": options.steps,
                    "tier": options.tier.value, "families": list(options.families),
                    "split": options.split, "every_call": options.every_call,
                    "url": options.url},
        "sessions": [{"name": s.name, "family": s.family, "split": s.split,
                      "runs": s.runs, "messages": len(s.messages),
                      "tokens": evaluation.raw_tokens[s.name],
                      "source": "chained real runs"} for s in evaluation.sessions],
        "rows": [summary(evaluation.rows, r) for r in evaluation.rows]}
