"""Where a cold (or warm) ``/synthesize`` fast call's time goes, stage by stage, against
the tokenizer floor timed in the same round: what ``contextsynth bench`` times as one,
taken apart.

Run from the root of the checkout to measure (it imports ``app`` from there, compiled if
its extensions are built), on a corpus folder:

    python scripts/cold_stages.py [--warm] [--rounds 3] [--dir corpus/transcripts]
                                  [--json FILE]

It also runs on the engine as it was at 52c44f4 (the modules' old places), which is how
docs/performance.md compares the two. Each stage is the synthesizer's own step, called
here one at a time: parse, validate, lift (text actions read as calls), observe (phase
signals and nudge), segment, count (the input's tokens), confidence (whether the run's
shape was read), weigh (which blocks close: notes written to weigh them), compact (the
notes, the ledger and the recent turns), lower (back to the wire's shapes), account
(tokens and the receipt's lost facts), finish, render. Per transcript and stage the best
time of the rounds is kept, summed over the corpus; the floor is tiktoken encoding every
text (as ``bench`` times it). ``--json`` writes the printed lines and the figures as
``bench --json`` does (see docs/figures/bench.json).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, os.getcwd())

from app.adapters.tokenizer import load_encoding, pretokenizer
from app.corpus import load, transcript_files

NEW = Path("app/engine/jobs/synthesize/synthesizer.py").exists()
if NEW:  # the engine's layout since the jobs moved into packages
    from app.engine.compaction.lifting import lift
    from app.engine.compaction.strategies import builtin_strategies
    from app.engine.compaction.tiers import TIER_BUDGETS, Tier
    from app.engine.jobs.accounting import account
    from app.engine.jobs.synthesize.nudge import nudge
    from app.engine.jobs.synthesize.synthesizer import Prepared, SynthesisOptions, Synthesizer
    from app.engine.reading.calls import validate
    from app.engine.reading.confidence import read_with_confidence
    from app.engine.reading.phases import classify, observe
    from app.engine.transcript.formats.openai import OpenAIFormat
    from app.engine.transcript.model import segment
    from app.engine.transcript.tokens import TokenCounter
else:  # 52c44f4
    from app.engine.accounting import account  # type: ignore[no-redef]
    from app.engine.calls import validate  # type: ignore[no-redef]
    from app.engine.formats.openai import OpenAIFormat  # type: ignore[no-redef]
    from app.engine.phases import classify, observe  # type: ignore[no-redef]
    from app.engine.strategies import builtin_strategies  # type: ignore[no-redef]
    from app.engine.synthesis import (  # type: ignore[no-redef]
        Prepared,
        SynthesisOptions,
        Synthesizer,
    )
    from app.engine.tiers import TIER_BUDGETS, Tier  # type: ignore[no-redef]
    from app.engine.tokens import TokenCounter  # type: ignore[no-redef]

    from app.engine.prompts import nudge  # type: ignore[no-redef]
    from app.engine.transcript import segment  # type: ignore[no-redef]

STAGES = ("parse", "validate", "lift", "observe", "segment", "count", "confidence", "weigh",
          "compact", "lower", "account", "finish", "render")


def _texts(transcript: Any) -> list[str]:
    out: list[str] = []
    for m in transcript.messages:
        out.extend(p.text for p in m.parts if p.text)
        for c in m.tool_calls:
            out.extend((c.name, c.arguments))
    return out


def _call(synthesizer: Any, wire: Any, payload: dict[str, Any], options: Any,
          ) -> dict[str, float]:
    """One call, its stages timed: the steps of ``Synthesizer.run``, written out."""
    times: dict[str, float] = {}
    clock = time.perf_counter

    def timed(stage: str, started: float) -> float:
        now = clock()
        times[stage] = now - started
        return now

    t = clock()
    transcript = wire.parse(payload)
    t = timed("parse", t)
    caches, counter = synthesizer._caches, synthesizer._counter
    messages = transcript.messages
    validate(messages, caches.calls)
    t = timed("validate", t)
    lifted = lift(messages, caches.actions) if NEW else None
    lm = lifted.messages if lifted is not None else messages
    t = timed("lift", t)
    signals = observe(lm, options.phase, caches.outcomes, caches.calls)
    phase = classify(signals, options.phase)
    text = None
    if options.steer and (not TIER_BUDGETS[options.tier].late_nudge_only
                          or signals.max_iterations is None or signals.late):
        text = nudge(phase, signals, options.phase.output_tools or ())
    t = timed("observe", t)
    context = caches.context(lm, options.tier, counter.messages)
    t = timed("segment", t)
    before = counter.messages(messages)
    t = timed("count", t)
    segments = context.segments
    task = messages[segments.task_index].text if segments.task_index is not None else None
    read = True
    if NEW:
        read = read_with_confidence(lm, segments.head_stop)
        prepared = Prepared(transcript, lifted, options, context, signals, phase, text, task,
                            before, read)
    else:
        prepared = Prepared(transcript, options, context, signals, phase, text, task, before)
    t = timed("confidence", t)
    strategy = synthesizer._strategies["fast"] if read else synthesizer._window
    if hasattr(strategy, "blocks"):  # the blocks weighed, as compact weighs them first
        strategy.blocks(lm, context)
    t = timed("weigh", t)
    compaction = strategy.compact(lm, context)
    t = timed("compact", t)
    low = lifted.lower_compaction(compaction) if lifted is not None else compaction
    recurs = low.noted if low.noted is not None else low.stable
    t = timed("lower", t)
    account(counter, caches.facts, messages, before, list(low.messages), low.dropped,
            settled=low.settled, recurring=recurs or 0)
    t = timed("account", t)
    result = synthesizer._finish(prepared, compaction, strategy.name)
    t = timed("finish", t)
    wire.render(result.transcript)
    timed("render", t)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warm", action="store_true",
                        help="after the same transcript without its last turn")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=Path("corpus/transcripts"))
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    encoder = load_encoding("cl100k_base")
    pre = pretokenizer(encoder)
    wire = OpenAIFormat()
    options = SynthesisOptions(tier=Tier.MID)
    totals = dict.fromkeys(STAGES, 0.0)
    floor_total = 0.0
    for path in transcript_files(args.dir):
        messages = load(path)
        payload = {"messages": messages}
        parsed = wire.parse(payload)
        prefix = {"messages": messages[: segment(parsed.messages).turns[-1].start]}
        texts = _texts(parsed)
        best = dict.fromkeys(STAGES, float("inf"))
        floor = float("inf")
        for _ in range(args.rounds):
            started = time.perf_counter()
            for t in texts:
                encoder.encode_ordinary(t)
            floor = min(floor, time.perf_counter() - started)
            synthesizer = Synthesizer(TokenCounter(encoder, pretokenizer=pre),
                                      builtin_strategies())
            if args.warm:
                synthesizer.run(wire.parse(prefix), options)
            for stage, seconds in _call(synthesizer, wire, payload, options).items():
                best[stage] = min(best[stage], seconds)
        floor_total += floor
        for stage in STAGES:
            totals[stage] += best[stage]
    whole = sum(totals.values())
    printed = [f"{'stage':12} {'ms':>9} {'x floor':>8} {'share':>6}"]
    printed += [f"{s:12} {v * 1000:9.1f} {v / floor_total:8.3f} {v / whole:6.1%}"
                for s, v in totals.items()]
    printed.append(f"{'all':12} {whole * 1000:9.1f} {whole / floor_total:8.3f}")
    printed.append(f"{'floor':12} {floor_total * 1000:9.1f}")
    print("\n".join(printed))
    if args.json is not None:
        import app.engine.memo as memo

        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
            else os.cpu_count()
        run = {"command": " ".join(["python scripts/cold_stages.py", *sys.argv[1:]]),
               "date": datetime.date.today().isoformat(),
               "machine": {"cpus": cpus, "cpu": platform.processor() or platform.machine(),
                           "python": platform.python_version(),
                           "engine": "interpreted" if memo.__file__.endswith(".py")
                           else "compiled"},
               "printed": "\n".join(printed),
               "summary": {"floor_s": floor_total, "stages_s": totals, "warm": args.warm}}
        args.json.write_text(json.dumps(run, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
