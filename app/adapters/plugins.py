"""Strategies registered by other packages in the ``contextsynth.strategies`` group."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from importlib.metadata import EntryPoint, entry_points

from app.engine.compaction.base import Strategy

GROUP = "contextsynth.strategies"
log = logging.getLogger(__name__)


def _installed() -> Iterable[EntryPoint]:
    return entry_points(group=GROUP)


def load_strategies(
    builtins: Mapping[str, Strategy],
    discover: Callable[[], Iterable[EntryPoint]] = _installed,
) -> dict[str, Strategy]:
    """Built-ins plus plugins; a plugin may not take a built-in's name.

    An entry point names a class (built with no arguments) or an object with
    ``name`` and ``compact``.
    """
    strategies = dict(builtins)
    for ep in discover():
        if ep.name in builtins:
            log.warning("strategy plugin %s ignored: %r is a built-in name", ep.value, ep.name)
            continue
        loaded = ep.load()
        strategy = loaded() if isinstance(loaded, type) else loaded
        if not callable(getattr(strategy, "compact", None)):
            log.warning("strategy plugin %s ignored: it has no compact() method", ep.value)
            continue
        strategies[ep.name] = strategy
    return strategies
