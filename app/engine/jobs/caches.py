"""The per-content memos every job shares, and the one place a StrategyContext is made."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from app.engine.compaction.base import Handles, StrategyContext
from app.engine.compaction.tiers import TIER_BUDGETS, Tier
from app.engine.reading.calls import CallSummaries
from app.engine.reading.facts import FactExtractor
from app.engine.reading.gist import Gists
from app.engine.reading.outcomes import Outcomes
from app.engine.reading.repeats import LineMemo
from app.engine.reading.salient import SalientLines
from app.engine.reading.textactions import TextActions
from app.engine.transcript.model import Message, segment


class EngineCaches:
    """Memos keyed by content, so a transcript resent with one more turn is read once;
    built once by the app and shared by its jobs."""

    def __init__(self) -> None:
        self.outcomes = Outcomes()
        self.facts = FactExtractor()
        self.calls = CallSummaries()
        self.handles = Handles()
        self.lines = LineMemo()
        self.salient = SalientLines()
        self.gists = Gists()
        self.actions = TextActions()

    def context(self, messages: Sequence[Message], tier: Tier = Tier.MID,
                tokens: Callable[[Sequence[Message]], int] | None = None) -> StrategyContext:
        """What a strategy reads a transcript with: the tier's budget, its segments and
        these memos (``tokens``: count windows in tokens as well as turns)."""
        return StrategyContext(TIER_BUDGETS[tier], segment(messages), self.handles,
                               self.calls, self.outcomes, tokens, self.lines, self.salient,
                               self.gists)
