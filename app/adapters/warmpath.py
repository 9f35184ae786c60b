"""The warm path on /metrics: how the caches that make a resending agent's call cheap
are serving.

An agent resends its whole history every step, and the engine answers from what this
process remembers of that conversation: the body it parsed last time (resent
bodies), the recent turns it trimmed (tails), the notes of closed blocks (block
notes) and token counts. When an agent's calls land on another process each time
(no affinity), or the caches are too small for the agents calling, these miss and
every call costs what a cold one does; the hit rates say so first.

The counts live on the caches (plain integers, see ``CacheUsage``) and are read when
/metrics is scraped. With several worker processes, the series are those of the
worker that answered the scrape.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from app.engine.memo import CacheUsage


class WarmPath(Collector):
    """``caches``: name -> a function giving that cache's ``CacheUsage`` now."""

    def __init__(self, caches: Mapping[str, Callable[[], CacheUsage]]) -> None:
        self._caches = dict(caches)

    def register(self, registry: CollectorRegistry) -> WarmPath:
        registry.register(self)
        return self

    def collect(self) -> Iterator[Metric]:
        lookups = CounterMetricFamily(
            "contextsynth_warm_lookups", "Lookups of each warm-path cache, by result.",
            labels=["cache", "result"])
        evictions = CounterMetricFamily(
            "contextsynth_warm_evictions", "Entries each warm-path cache let go to stay "
            "in its bound.", labels=["cache"])
        held = GaugeMetricFamily(
            "contextsynth_warm_held", "What each warm-path cache holds, in the unit of "
            "its bound.", labels=["cache", "unit"])
        entries = GaugeMetricFamily(
            "contextsynth_warm_entries", "Entries each warm-path cache holds.",
            labels=["cache"])
        for name, read in self._caches.items():
            usage = read()
            lookups.add_metric([name, "hit"], usage.hits)
            lookups.add_metric([name, "miss"], usage.misses)
            evictions.add_metric([name], usage.evicted)
            held.add_metric([name, "bytes"], usage.held)
            entries.add_metric([name], usage.entries)
        yield from (lookups, evictions, held, entries)
        if "tails" in self._caches:
            # One tail per agent loop this process is carrying on.
            yield GaugeMetricFamily(
                "contextsynth_active_conversations", "Agent loops in progress this process "
                "holds the recent turns of.", value=self._caches["tails"]().entries)
