"""The built-in strategies; plugins join them from the ``contextsynth.strategies`` group."""

from __future__ import annotations

from app.engine.compaction.base import Strategy
from app.engine.compaction.fast import FastStrategy
from app.engine.compaction.masking import ObservationMask
from app.engine.compaction.notes import Notes
from app.engine.compaction.rebuild import RebuildStrategy


def builtin_strategies() -> dict[str, Strategy]:
    notes = Notes()  # both fast strategies read the same runs: one cache serves them
    strategies: list[Strategy] = [FastStrategy(notes), RebuildStrategy(notes), ObservationMask()]
    return {s.name: s for s in strategies}
