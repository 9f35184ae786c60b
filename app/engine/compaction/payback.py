"""When rewriting a cached prompt pays: the price model ``fast`` weighs its choices by.

A provider's prompt cache bills the prefix a call shares with the previous one at a
tenth of an input token. Whatever a compaction changes is new to that cache from the
first changed token on, and is paid in full once (Anthropic: at the cache-write price,
1.25x, the stricter case; OpenAI: 1x); every token it takes out then saves a cache read
on each later call. A rewrite pays when those savings, over the calls still to come,
cover it. How many are to come is not known: a run has even odds of going on as long
again as it has lasted, so the calls made so far, times a tier's ``closing_payback``,
stand for them.

The same prices weigh the tail's turns once a turn follows them (``fast.trim_pays``)
and the nudge, which is new to the cache on every call (``rides``).
"""

from __future__ import annotations

# A token sent new on every call (one after the prefix the next call shares) costs a
# cache write each time, in cache reads: 1.25 / 0.1.
FRESH_IN_READS = 1.25 / 0.1
# A rewritten token costs what a cache write does less the cache read it replaces, in
# cache reads: (1.25 - 0.1) / 0.1.
REWRITE_IN_READS = (1.25 - 0.1) / 0.1


def pays(saved: int, rewritten: int, calls: float) -> bool:
    """Whether taking ``saved`` tokens out of every later call, at the price of sending
    ``rewritten`` tokens anew once, pays back within ``calls`` later calls."""
    return REWRITE_IN_READS * rewritten <= calls * saved


def rides(saved: int, fresh: int) -> bool:
    """Whether ``fresh`` tokens added at the end of every call (the nudge: the next call's
    new messages take its place, so the cache never holds it) cost less than the cache
    reads that taking ``saved`` tokens out of the prompt saves on the same call."""
    return FRESH_IN_READS * fresh <= saved
