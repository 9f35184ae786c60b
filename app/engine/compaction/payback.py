"""When rewriting a cached prompt pays: the price model ``fast`` weighs its choices by.

A provider's prompt cache bills the prefix a call shares with the previous one at a
tenth of an input token. Whatever a compaction changes is new to that cache from the
first changed token on, and is paid in full once (Anthropic: at the cache-write price,
1.25x, the stricter case; OpenAI: 1x); every token it takes out then saves a cache read
on each later call. A rewrite pays when those savings, over the calls still to come,
cover it. How many are to come is not known: a run has even odds of going on as long
again as it has lasted, so the calls made so far, times a tier's ``closing_payback``,
stand for them.
"""

from __future__ import annotations

# A rewritten token costs what a cache write does less the cache read it replaces, in
# cache reads: (1.25 - 0.1) / 0.1.
REWRITE_IN_READS = (1.25 - 0.1) / 0.1


def pays(saved: int, rewritten: int, calls: float) -> bool:
    """Whether taking ``saved`` tokens out of every later call, at the price of sending
    ``rewritten`` tokens anew once, pays back within ``calls`` later calls."""
    return REWRITE_IN_READS * rewritten <= calls * saved
