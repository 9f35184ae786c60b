"""The table of jobs: one line registers one, and routes reach it by name."""

from __future__ import annotations

from collections.abc import Mapping

from app.engine.compaction.base import Strategy
from app.engine.jobs.caches import EngineCaches
from app.engine.jobs.history.compressor import HistoryCompressor
from app.engine.jobs.history.plan import HistoryJob
from app.engine.jobs.recall.plan import RecallJob
from app.engine.jobs.reflect.plan import ReflectJob
from app.engine.jobs.reflect.reflector import Reflector
from app.engine.jobs.rescue.plan import RescueJob
from app.engine.jobs.synthesize.plan import SynthesisDefaults, SynthesizeJob
from app.engine.jobs.synthesize.synthesizer import Synthesizer
from app.engine.jobs.trace.plan import TraceJob
from app.engine.jobs.trace.summarizer import TraceSummarizer
from app.engine.transcript.formats import WireFormat
from app.engine.transcript.tokens import TokenCounter
from app.settings import Settings


class Jobs:
    """Every job the service runs, one line each; a route reaches its job by name."""

    def __init__(self, counter: TokenCounter, strategies: Mapping[str, Strategy],
                 caches: EngineCaches, formats: Mapping[str, WireFormat]) -> None:
        self.synthesize = SynthesizeJob(Synthesizer(counter, strategies, caches), formats)
        self.history = HistoryJob(HistoryCompressor(counter, caches), formats)
        self.trace = TraceJob(TraceSummarizer(counter, caches))
        self.rescue = RescueJob(caches, formats, counter)
        self.recall = RecallJob(counter)
        self.reflect = ReflectJob(Reflector(caches.outcomes, counter.text))


def synthesis_defaults(settings: Settings) -> SynthesisDefaults:
    """The settings every synthesis reads, for the /synthesize route and the proxy
    alike: a new one is added here and in ``SynthesisDefaults``, and nowhere else."""
    return SynthesisDefaults(settings.default_tier, bool(settings.synthesis_model),
                             settings.deep_threshold_tokens, settings.budget_share)
