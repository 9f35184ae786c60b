"""The per-content memos every job shares, and the one place a StrategyContext is made."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from app.engine.compaction.base import Handles, StrategyContext
from app.engine.compaction.tiers import TIER_BUDGETS, Tier
from app.engine.memo import CacheUsage, shares
from app.engine.reading.calls import CallSummaries
from app.engine.reading.facts import FactExtractor
from app.engine.reading.gist import Gists
from app.engine.reading.names import Names
from app.engine.reading.outcomes import Outcomes
from app.engine.reading.records import Records
from app.engine.reading.repeats import LineMemo
from app.engine.reading.salient import SalientLines
from app.engine.reading.textactions import TextActions
from app.engine.transcript.model import Message, segment

# How the engine's share of a worker's memory is spread over its caches: what a
# conversation's next call reads again most (the facts of what was dropped, the notes of
# closed blocks, the trimmed recent turns) gets the most. Keyed by their texts'
# fingerprints, outcomes, gists, salient lines and handles hold a few bytes an agent
# (bench --load --agents --kb 40: 1-5 KB each); what texts read as (actions) and call
# summaries save a warm call the most after token counts (2 and 0.9 ms of 7.5). Then,
# with 1,000 agents of real size in progress (bench --load --agents 10 1000
# --from-step 30, 176 KB bodies), by what each agent's next call reads (KB an agent,
# every entry kept) and what its misses cost (the time each memo spent computing what
# it missed, 10 agents against 1,000, timed in process): the facts about 130 (their
# runs' 52 once a run kept its other tokens as bytes, the kept texts' 40, the recurring
# part's 19), the actions 45 (a reading 2.4 KB, missed for 23 us: 0.22 ms a call at
# 1,000 agents), the lines' keys 9 (missed for 9 us), outcomes 11 (15 us), call
# summaries 3 shared among agents (33 us), handles 6 (5 us). Outcomes and call
# summaries get twice their live entries, the actions what is left (their readings do
# not all fit); the lines' keys, whose misses cost little, give up some.
# Every entry also counts the pair it is kept in (``memo``): the memos of many small
# entries (outcomes, handles) take a little more. The rows of JSON answers a request may
# name (``records``) are a support agent's few results: a hundredth. The names in an
# agent's messages and the lists of them a digest shows (``names``), read only when a
# budget condenses turns into a digest, take a fiftieth from the facts: a budgeted
# call on OpenCode's 3,953-message session reads some 4,000 texts' names, and read again
# on every call they had made it half again as slow.
READING_SHARES: Mapping[str, float] = {
    "facts": 0.55, "records": 0.01, "calls": 0.04, "outcomes": 0.09, "handles": 0.03,
    "lines": 0.05, "salient": 0.01, "gists": 0.01, "names": 0.02, "actions": 0.19}
# The engine's bytes between the reading memos above, the strategies' (runs, block
# notes, tails: see ``builtin_strategies``) and token counts. Token counts held 16 MB
# at 1,000 agents (about 108,000 texts, 148 bytes each with the pair it is kept in),
# more than their twentieth kept: a miss encodes its text again (73 us, 0.6 ms a call
# at 1,000 agents), so they get twice that. The strategies' runs let go of their texts
# (``Runs``), but the notes of 1,000 agents' closed blocks hold 55 MB (12 KB a block),
# and a note made again costs 0.8 ms: the compaction share grows by what the facts'
# kept texts gave up (their tokens read again for 10 us).
ENGINE_SHARES: Mapping[str, float] = {"reading": 0.58, "compaction": 0.34, "token_counts": 0.08}
DEFAULT_ENGINE_BYTES = 384 << 20


class EngineCaches:
    """Memos keyed by content, so a transcript resent with one more turn is read once;
    built once by the app and shared by its jobs, holding at most ``cache_bytes`` (see
    ``footprint``)."""

    def __init__(self, cache_bytes: int = int(DEFAULT_ENGINE_BYTES
                                              * ENGINE_SHARES["reading"])) -> None:
        share = shares(cache_bytes, READING_SHARES)
        self.outcomes = Outcomes(cache_bytes=share["outcomes"])
        self.facts = FactExtractor(cache_bytes=share["facts"])
        self.calls = CallSummaries(cache_bytes=share["calls"])
        self.handles = Handles(cache_bytes=share["handles"])
        self.lines = LineMemo(cache_bytes=share["lines"])
        self.salient = SalientLines(cache_bytes=share["salient"])
        self.gists = Gists(cache_bytes=share["gists"])
        self.names = Names(cache_bytes=share["names"])
        self.actions = TextActions(cache_bytes=share["actions"])
        self.records = Records(cache_bytes=share["records"])

    def usage(self) -> dict[str, CacheUsage]:
        """How each memo serves and what it holds (see ``CacheUsage``), by name."""
        return {**self.facts.usage(), "call_summaries": self.calls.usage,
                "outcomes": self.outcomes.usage, "handles": self.handles.usage,
                "line_keys": self.lines.usage, "salient_lines": self.salient.usage,
                "gists": self.gists.usage, "names": self.names.usage,
                "text_actions": self.actions.usage, "records": self.records.usage}

    def context(self, messages: Sequence[Message], tier: Tier = Tier.MID,
                tokens: Callable[[Sequence[Message]], int] | None = None) -> StrategyContext:
        """What a strategy reads a transcript with: the tier's budget, its segments and
        these memos (``tokens``: count windows in tokens as well as turns)."""
        return StrategyContext(TIER_BUDGETS[tier], segment(messages), self.handles,
                               self.calls, self.outcomes, tokens, self.lines, self.salient,
                               self.gists, self.names)
