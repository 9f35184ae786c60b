"""The built-in strategies; plugins join them from the ``contextsynth.strategies`` group."""

from __future__ import annotations

from app.engine.compaction.base import Strategy
from app.engine.compaction.closings import Closings
from app.engine.compaction.fast import FastStrategy
from app.engine.compaction.masking import ObservationMask
from app.engine.compaction.notes import Notes
from app.engine.compaction.rebuild import RebuildStrategy
from app.engine.compaction.runs import Runs
from app.engine.compaction.tails import Tails
from app.engine.memo import shares

# The strategies' bytes: runs' summaries (both fast strategies read them), the notes of
# closed blocks, and the trimmed recent turns. The tails save a warm call the least
# (trimming again from the line memos is a fraction of a millisecond); they held the
# most bytes an agent (470 KB for an 80 KB body) until an entry kept only what the
# trimming wrote, about 80 KB. At 1,000 agents of 138 KB bodies (bench --load --agents
# --from-step 30) the notes hold 62 KB an agent and the tails 22, which these shares
# keep; the runs' summaries were hit as often when most were let go as with every one
# kept (32% of lookups: a run's hits come from its agent's previous call). The blocks
# each agent's last call closed take a few hundred bytes an agent (see ``closings``).
_SHARES = {"runs": 0.26, "block_notes": 0.54, "tails": 0.18, "closings": 0.02}


def builtin_strategies(cache_bytes: int = 160 << 20) -> dict[str, Strategy]:
    """The built-in strategies, whose caches hold at most ``cache_bytes`` together."""
    share = shares(cache_bytes, _SHARES)
    notes = Notes(Runs(cache_bytes=share["runs"]))  # one cache serves both fast strategies
    fast = FastStrategy(notes, Tails(share["tails"]), notes_bytes=share["block_notes"],
                        closings=Closings(cache_bytes=share["closings"]))
    strategies: list[Strategy] = [fast, RebuildStrategy(notes), ObservationMask()]
    return {s.name: s for s in strategies}
