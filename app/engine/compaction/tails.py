"""The recent turns as the last call trimmed them, for the next call to carry on from.

Between block closings an agent's next call sends the recent turns of its last call
and one turn more. Each recent turn is trimmed against the turns before it in the
tail (what they show) and the tier, nothing else, so every turn but the last call's
newest comes out the same again: a profile of the agent-loop replay found trimming
them again a third of a warm call. The trimmed turns are kept under their content
and the next call trims only what changed: the turn that was newest (cut like the
others now) and the new one.

A hit must be the same messages, not only the same text: the wire raw of each message
(an Anthropic ``cache_control`` the agent moved, a field the renderer passes on) is
compared too, and anything else is a miss, trimmed as on a cold call.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from app.engine.compaction.base import Span
from app.engine.compaction.tiers import TierBudget
from app.engine.memo import CacheUsage
from app.engine.transcript.model import Message
from app.engine.transcript.sizes import size_of

# What a tail's turns contribute to its key: role, texts, calls, result flags.
Identity = tuple[object, ...]
Key = tuple[TierBudget, int, tuple[Identity, ...]]


def identity(m: Message) -> Identity:
    texts = tuple([(p.kind, p.text) for p in m.parts])
    calls = tuple([(c.id, c.name, c.arguments) for c in m.tool_calls])
    return (m.role, texts, calls, m.tool_call_id, m.is_error, m.index)


class Trimmed:
    """Turns trimmed: the messages to send, the spans of what was cut, the originals cut,
    and the lines shown once they are, which the turns after them are trimmed against.
    A message sent or cut as it came is kept as its place among the sources, so that a
    later call gets its own message object (the synthesizer checks that the user's
    messages are the ones it was sent)."""

    def __init__(self, sources: tuple[Message, ...], out: Sequence[Message],
                 spans: tuple[Span, ...], dropped: Sequence[Message],
                 shown: frozenset[str]) -> None:
        place = {id(m): i for i, m in enumerate(sources)}
        self.sources = sources  # the messages as they came, to check a hit against
        self.out: tuple[Message | int, ...] = tuple([place.get(id(m), m) for m in out])
        self.spans = spans
        self.dropped: tuple[Message | int, ...] = tuple([place.get(id(m), m) for m in dropped])
        self.shown = shown

    def replayed(self, sources: Sequence[Message]) -> tuple[list[Message], list[Message]]:
        """The messages to send and the originals cut, for these sources."""
        out = [sources[x] if isinstance(x, int) else x for x in self.out]
        dropped = [sources[x] if isinstance(x, int) else x for x in self.dropped]
        return out, dropped


class Tails:
    """One entry per agent loop in progress (an entry that was carried on from is
    dropped), holding at most ``max_bytes`` of messages (see ``footprint``), the entry
    stored longest ago going first."""

    def __init__(self, max_bytes: int = 32 << 20) -> None:
        self._entries: dict[Key, Trimmed] = {}
        self._sizes: dict[Key, int] = {}
        self._bytes = 0
        self._max = max_bytes
        # Large requests are compacted in worker threads: eviction walks the dict.
        self._lock = threading.Lock()
        self._usage = CacheUsage()

    @property
    def usage(self) -> CacheUsage:
        """Lookups (a call's tail found or not), tails let go, and the bytes of messages
        held; entries: the agent loops in progress this process knows."""
        u = self._usage
        u.held = self._bytes
        u.entries = len(self._entries)
        return u

    def looked_up(self, found: bool) -> None:
        """Count one call's lookup (it may probe more than one key)."""
        if found:
            self._usage.hits += 1
        else:
            self._usage.misses += 1

    def get(self, key: Key, sources: Sequence[Message]) -> Trimmed | None:
        found = self._entries.get(key)
        if found is None or len(found.sources) != len(sources):
            return None
        for old, new in zip(found.sources, sources, strict=True):
            if old is not new and not _same_wire(old, new):
                return None
        return found

    def put(self, key: Key, trimmed: Trimmed, replaces: Key | None) -> None:
        size = size_of(trimmed.sources) + size_of(trimmed.out)
        with self._lock:
            if replaces is not None:
                self._drop(replaces)
            self._drop(key)
            self._entries[key] = trimmed
            self._sizes[key] = size
            self._bytes += size
            # The newest stays: its loop calls again next.
            while self._bytes > self._max and len(self._entries) > 1:
                self._drop(next(iter(self._entries)))
                self._usage.evicted += 1

    def _drop(self, key: Key) -> None:
        if self._entries.pop(key, None) is not None:
            self._bytes -= self._sizes.pop(key, 0)

    def __len__(self) -> int:
        return len(self._entries)


def _same_wire(old: Message, new: Message) -> bool:
    """The rest of what a renderer may pass on: the raws of the message, its parts and
    its calls (a format may build a message from several wire items), and its name."""
    if old.raw != new.raw or old.name != new.name:
        return False
    if any(a.raw != b.raw for a, b in zip(old.parts, new.parts, strict=True)):
        return False
    return all(a.raw == b.raw for a, b in zip(old.tool_calls, new.tool_calls, strict=True))
