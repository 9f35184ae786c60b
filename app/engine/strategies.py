"""The built-in strategies; plugins join them from the ``contextsynth.strategies`` group."""

from __future__ import annotations

from app.engine.compaction import Strategy
from app.engine.fast import FastStrategy
from app.engine.masking import ObservationMask


def builtin_strategies() -> dict[str, Strategy]:
    strategies: list[Strategy] = [FastStrategy(), ObservationMask()]
    return {s.name: s for s in strategies}
