"""How a worker's memory is shared among its caches: one total, from one setting or the
container's limit, in fixed shares.

Every cache of a worker is bounded by the bytes it holds, measured (``footprint``), and
lets go of what was used longest ago, so the conversations still calling stay warm.
Bounds that each cache chose for itself, in characters of keys, added up to more than
a pod's memory at a thousand agents; one total keeps their sum under the limit, with
the rest of the memory left for requests (see ``work.body_budget``).
"""

from __future__ import annotations

from dataclasses import dataclass

from app.engine.jobs.caches import ENGINE_SHARES
from app.engine.memo import shares

# The caches' part of a worker's memory limit (3/8: in a 1 GiB pod, the rest holds the
# interpreter and two of the largest requests at once), and their total when no limit
# is known.
MEMORY_SHARE = 3 / 8
CACHE_BYTES_UNKNOWN = 512 << 20
# Of the total: the in-process cache (LLM answers and, without Redis, every expand
# handle), the recent request bodies, and the engine's memos (split by ENGINE_SHARES).
# With Redis the in-process cache is not used, and the engine takes its share. Chosen
# with the fleet bench at 1,000 agents in a 1 GiB pod, where each cache's hit rate and
# the bytes it held showed what it needed (see README, Memory); then, with agents of real
# size (bench --load --agents --from-step 30, about 80 KB a body), by what a warm call
# loses without each: a remembered body saves its call a parse (about 0.5 ms) for about
# three times the body's bytes, the engine's memos most of a cold call (about 40 ms).
# Then the remembered bodies let their bytes go (a fingerprint where each message ends
# is what reuse checks): what is left is their parsed messages, 2.4 to 2.9 times a body,
# which at 1,000 agents still did not fit a quarter of the total (no body was reused)
# while the engine's memos missed. A twentieth keeps 86% of them reused at 10 agents,
# and the engine's memos hold the rest: 1,000 agents went from 2.50-2.62 to 2.18 times
# the CPU a call of 10 (bench --load --agents 10 1000 --from-step 30, interpreted).
SHARES = {"in_process": 0.15, "resent_bodies": 0.05, "engine": 0.80}


@dataclass(frozen=True)
class CachePlan:
    """Bytes each cache may hold."""

    total: int
    in_process: int
    resent_bodies: int
    reading: int  # the engine's reading memos (EngineCaches)
    compaction: int  # the strategies' runs, block notes and tails
    token_counts: int


def cache_plan(memory_bytes: int | None, total: int | None = None, *,
               shared_cache: bool = False, in_process: int | None = None) -> CachePlan:
    """The plan for a worker with ``memory_bytes`` (None: not known) and caches of
    ``total`` bytes (None: their share of the memory). ``shared_cache``: LLM answers and
    handles live in Redis, not in the process. ``in_process``: that cache's bytes as
    configured on their own, taken out of the total."""
    if total is None:
        total = CACHE_BYTES_UNKNOWN if memory_bytes is None else int(memory_bytes * MEMORY_SHARE)
    share = shares(total, SHARES)
    own = 0 if shared_cache else share["in_process"] if in_process is None else in_process
    engine = max(total - own - share["resent_bodies"], total // 4)
    parts = shares(engine, ENGINE_SHARES)
    return CachePlan(total, own, share["resent_bodies"], parts["reading"],
                     parts["compaction"], parts["token_counts"])
