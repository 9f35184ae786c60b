"""The table of jobs: one line registers one, and routes reach it by name."""

from __future__ import annotations

from collections.abc import Mapping

from app.engine.caches import EngineCaches
from app.engine.compaction import Strategy
from app.engine.formats import WireFormat
from app.engine.history import HistoryCompressor
from app.engine.jobs.history import HistoryJob
from app.engine.jobs.recall import RecallJob
from app.engine.jobs.reflect import ReflectJob
from app.engine.jobs.rescue import RescueJob
from app.engine.jobs.synthesize import SynthesizeJob
from app.engine.jobs.trace import TraceJob
from app.engine.reflect import Reflector
from app.engine.synthesis import Synthesizer
from app.engine.tokens import TokenCounter
from app.engine.trace import TraceSummarizer


class Jobs:
    """Every job the service runs, one line each; a route reaches its job by name."""

    def __init__(self, counter: TokenCounter, strategies: Mapping[str, Strategy],
                 caches: EngineCaches, formats: Mapping[str, WireFormat]) -> None:
        self.synthesize = SynthesizeJob(Synthesizer(counter, strategies, caches), formats)
        self.history = HistoryJob(HistoryCompressor(counter, caches), formats)
        self.trace = TraceJob(TraceSummarizer(counter, caches))
        self.rescue = RescueJob(caches, formats)
        self.recall = RecallJob(counter)
        self.reflect = ReflectJob(Reflector(caches.outcomes))
