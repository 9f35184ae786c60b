"""``contextsynth bench --long``: the time of a call on the longest session, per budget.

The session is ``eval --long``'s longest: the runs of one agent family chained into one
conversation (by default the 14 mini-swe-agent runs, 2,345 messages). Its last call is
timed as ``bench`` times a transcript (best of the rounds, floor, cold and warm back to
back in each round), without a budget and with each of ``budgets``: a budget that binds
condenses the oldest turns, which costs compactions of the run beside the one ``fast``
makes, so this is where a budget's price shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from app.adapters.tokenizer import load_encoding, pretokenizer
from app.cli.bench import best_times, counted_texts
from app.engine.compaction.strategies import builtin_strategies
from app.engine.compaction.tiers import Tier
from app.engine.jobs.synthesize.budget import Budget
from app.engine.jobs.synthesize.synthesizer import SynthesisOptions, Synthesizer
from app.engine.transcript.formats.openai import OpenAIFormat
from app.engine.transcript.model import segment
from app.engine.transcript.tokens import TokenCounter
from app.evaluation.long import BUDGETS, sessions


def run(directory: Path | None = None, *, budgets: Sequence[int] = BUDGETS,
        repeat: int = 3, tier: str = "mid") -> int:
    encoder = load_encoding("cl100k_base")
    session = max(sessions(directory), key=lambda s: len(s.messages))
    messages = session.messages
    wire = OpenAIFormat()
    parsed = wire.parse({"messages": messages})
    payload = {"messages": messages}
    prefix = {"messages": messages[: segment(parsed.messages).turns[-1].start]}
    texts = counted_texts(parsed)
    pre = pretokenizer(encoder)
    print(f"{session.name}: {len(messages)} messages, its last call, tier {tier}")
    print(f"{'budget':>8} {'floor ms':>9} {'cold ms':>9} {'cold/floor':>10} {'warm ms':>9} "
          f"{'warm/cold':>9} {'tokens out':>10}")
    rows: list[dict[str, Any]] = []
    for budget in (None, *budgets):
        options = SynthesisOptions(tier=Tier(tier),
                                   budget=Budget(budget) if budget is not None else None)

        def fresh() -> Synthesizer:
            return Synthesizer(TokenCounter(encoder, pretokenizer=pre), builtin_strategies())

        def primed(options: SynthesisOptions = options) -> Synthesizer:
            synthesizer = fresh()
            synthesizer.run(wire.parse(prefix), options)
            return synthesizer

        def call(synthesizer: Synthesizer, options: SynthesisOptions = options) -> object:
            return wire.render(synthesizer.run(wire.parse(payload), options).transcript)

        best = best_times(repeat, {
            "floor": (lambda: None, lambda _: [encoder.encode_ordinary(t) for t in texts]),
            "cold": (fresh, call), "warm": (primed, call)})
        out = fresh().run(parsed, options).tokens_after
        row = {"budget": budget, "floor_ms": best["floor"] * 1000,
               "cold_ms": best["cold"] * 1000, "warm_ms": best["warm"] * 1000,
               "cold_x": best["cold"] / best["floor"], "warm_share": best["warm"] / best["cold"],
               "tokens_after": out}
        rows.append(row)
        label = f"{budget:>8}" if budget is not None else f"{'none':>8}"
        print(f"{label} {row['floor_ms']:>9.1f} {row['cold_ms']:>9.1f} {row['cold_x']:>9.2f}x "
              f"{row['warm_ms']:>9.1f} {row['warm_share']:>8.1%} {out:>10}")
    return 0

