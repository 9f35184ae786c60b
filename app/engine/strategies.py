"""The built-in strategies; plugins join them from the ``contextsynth.strategies`` group."""

from __future__ import annotations

from app.engine.blocks import BlockStrategy
from app.engine.compaction import Strategy
from app.engine.fast import FastStrategy
from app.engine.masking import ObservationMask
from app.engine.notes import Notes


def builtin_strategies() -> dict[str, Strategy]:
    notes = Notes()  # both fast strategies read the same runs: one cache serves them
    strategies: list[Strategy] = [BlockStrategy(notes), FastStrategy(notes), ObservationMask()]
    return {s.name: s for s in strategies}
