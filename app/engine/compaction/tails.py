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

What an entry keeps is what the next call needs, not the turns it came from: the
trimmed messages (their wire objects left out: each is the one at the same place among
the next call's turns, which a hit has the same), the spans (their originals too are
the next call's messages), the lines shown (as their fingerprints: see ``LineMemo``),
and fingerprints for the rest. The key is kept as its fingerprint (its 64-bit hash,
keyed by the process's secret, as the memos keep theirs: see ``memo``), and the turns
as one fingerprint of their wire forms. An entry so holds what the trimming wrote and
the lines shown, most of it the lines (80 to 110 KB an agent for bench --kb's bodies of
77 KB to 1 MB while they were kept as text; 16 KB an agent of 138 KB bodies at bench
--load --agents 1000 --from-step 30 as fingerprints, where 22 before), where it held
the recent turns twice over (as sent and as trimmed, each with the wire objects: four
to six times a body, 2.3 MB for the 1 MB one).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Final

from app.engine.compaction.base import Span
from app.engine.compaction.tiers import TierBudget
from app.engine.footprint import footprint
from app.engine.memo import CacheUsage
from app.engine.transcript.model import Message, Part, ToolCall
from app.engine.transcript.sizes import size_of

# What a tail's turns contribute to its key: role, texts, calls, result flags.
Identity = tuple[object, ...]
# The tier's budget, the calls made before the tail, the wire index of its first message
# and its messages.
Key = tuple[TierBudget, int, int, tuple[Identity, ...]]


def identity(m: Message) -> Identity:
    texts = tuple([(p.kind, p.text) for p in m.parts])
    calls = tuple([(c.id, c.name, c.arguments) for c in m.tool_calls])
    return (m.role, texts, calls, m.tool_call_id, m.is_error, m.index)


# Where a wire object sits among a tail's messages: the message, and -1 for its own raw,
# 2j for its part j's, 2j+1 for its call j's.
Place = tuple[int, int]


class _Stripped:
    """A trimmed message kept without the wire objects it shares with the turns it came
    from (``message``, those raws set to None), and where each sits among them."""

    raw: Place | None
    parts: tuple[Place | None, ...]
    calls: tuple[Place | None, ...]
    message: Message

    def __init__(self, m: Message, places: dict[int, Place]) -> None:
        self.raw = places.get(id(m.raw)) if m.raw is not None else None
        self.parts = tuple([places.get(id(p.raw)) if p.raw is not None else None
                            for p in m.parts])
        self.calls = tuple([places.get(id(c.raw)) if c.raw is not None else None
                            for c in m.tool_calls])
        parts = tuple([p if at is None else Part(p.kind, p.text)
                       for p, at in zip(m.parts, self.parts, strict=True)])
        calls = tuple([c if at is None else ToolCall(c.id, c.name, c.arguments)
                       for c, at in zip(m.tool_calls, self.calls, strict=True)])
        self.message = Message(m.role, parts, calls, m.tool_call_id, m.name, m.is_error,
                               m.raw if self.raw is None else None, m.index)

    def restored(self, sources: Sequence[Message]) -> Message:
        """The message with the wire objects of ``sources`` at its places."""
        m = self.message
        parts = m.parts
        if any(at is not None for at in self.parts):
            parts = tuple([p if at is None else Part(p.kind, p.text, _raw(sources, at))
                           for p, at in zip(m.parts, self.parts, strict=True)])
        calls = m.tool_calls
        if any(at is not None for at in self.calls):
            calls = tuple([c if at is None else ToolCall(c.id, c.name, c.arguments,
                                                         _raw(sources, at))
                           for c, at in zip(m.tool_calls, self.calls, strict=True)])
        raw = m.raw if self.raw is None else _raw(sources, self.raw)
        return Message(m.role, parts, calls, m.tool_call_id, m.name, m.is_error, raw, m.index)


class _Cut:
    """A span kept with its originals as their places among the sources, where they are
    sources (a span of the tail's turns: the messages a turn's trimming cut)."""

    span: Span
    originals: tuple[int, ...]

    def __init__(self, span: Span, originals: tuple[int, ...]) -> None:
        self.span = Span(span.handle, span.kind, span.first, span.last, span.messages,
                         span.tools)
        self.originals = originals

    def restored(self, sources: Sequence[Message]) -> Span:
        s = self.span
        return Span(s.handle, s.kind, s.first, s.last, s.messages, s.tools,
                    tuple([sources[i] for i in self.originals]))


def _raw(sources: Sequence[Message], at: Place) -> object:
    m = sources[at[0]]
    slot = at[1]
    if slot < 0:
        return m.raw
    return m.parts[slot // 2].raw if slot % 2 == 0 else m.tool_calls[slot // 2].raw


def _places(sources: Sequence[Message]) -> dict[int, Place]:
    """Each wire object of ``sources`` (by identity: they are alive while this is used),
    at its first place."""
    places: dict[int, Place] = {}
    for i in range(len(sources) - 1, -1, -1):  # backwards, so the first place stays
        m = sources[i]
        for j in range(len(m.tool_calls) - 1, -1, -1):
            if m.tool_calls[j].raw is not None:
                places[id(m.tool_calls[j].raw)] = (i, 2 * j + 1)
        for j in range(len(m.parts) - 1, -1, -1):
            if m.parts[j].raw is not None:
                places[id(m.parts[j].raw)] = (i, 2 * j)
        if m.raw is not None:
            places[id(m.raw)] = (i, -1)
    return places


class Trimmed:
    """Turns trimmed: the messages to send, the spans of what was cut, the originals cut,
    and the lines shown once they are, which the turns after them are trimmed against.
    A message sent or cut as it came is kept as its place among the sources, so that a
    later call gets its own message object (the synthesizer checks that the user's
    messages are the ones it was sent); a trimmed one without the sources' wire objects,
    and a span without the sources it cut (see the module's docstring). The sources are
    kept as their count and one fingerprint of their wire forms (``wires``), to check
    a hit against."""

    count: int
    wires: int
    out: tuple[_Stripped | int, ...]
    spans: tuple[_Cut | Span, ...]
    dropped: tuple[Message | int, ...]
    shown: frozenset[int]
    size: int

    def __init__(self, sources: tuple[Message, ...], out: Sequence[Message],
                 spans: tuple[Span, ...], dropped: Sequence[Message],
                 shown: frozenset[int]) -> None:
        place = {id(m): i for i, m in enumerate(sources)}
        places = _places(sources)
        self.count = len(sources)
        self.wires = wires(sources)
        self.out = tuple([
            place[id(m)] if id(m) in place else _Stripped(m, places) for m in out])
        self.spans = tuple([
            _Cut(s, tuple([place[id(o)] for o in s.originals]))
            if all(id(o) in place for o in s.originals) else s for s in spans])
        self.dropped = tuple([place.get(id(m), m) for m in dropped])
        self.shown = shown
        self.size = _weigh(self)

    def replayed(self, sources: Sequence[Message],
                 ) -> tuple[list[Message], list[Span], list[Message]]:
        """The messages to send, the spans and the originals cut, for these sources."""
        out = [sources[x] if isinstance(x, int) else x.restored(sources) for x in self.out]
        spans = [s.restored(sources) if isinstance(s, _Cut) else s for s in self.spans]
        dropped = [sources[x] if isinstance(x, int) else x for x in self.dropped]
        return out, spans, dropped


def _weigh(t: Trimmed) -> int:
    """What an entry holds (see ``footprint``): the trimmed messages, the spans, the
    lines shown and the places and fingerprints, each a pointer and a number."""
    size = 0
    for x in t.out:
        size += size_of(x.message) + 4 * 8 * (1 + len(x.parts) + len(x.calls)) \
            if isinstance(x, _Stripped) else 2 * 8
    for s in t.spans:
        size += footprint(s.span) + 2 * 8 * len(s.originals) if isinstance(s, _Cut) \
            else footprint(s)
    for m in t.dropped:
        size += 2 * 8 if isinstance(m, int) else size_of(m)
    return size + footprint(t.shown) + 4 * 8


_DICT: Final = "\x00dict"
_LIST: Final = "\x00list"
_TUPLE: Final = "\x00tuple"
_INT: Final = "\x00int"


def _form(value: object) -> object:
    """A hashable form of a wire value, whose hash two equal values share and two
    different ones share with the chance of a 64-bit hash (texts are hashed with the
    process's secret, most of it already: they are the key's texts). A value of a kind
    no wire holds gets a form of its own, which no other value shares: a miss."""
    if isinstance(value, str) or value is None or isinstance(value, (bool, float)):
        return value
    if isinstance(value, int):
        # An int's hash is the int modulo 2**61 - 1: two far apart would share it.
        return value if -_WIDE < value < _WIDE else (_INT, str(value))
    if isinstance(value, dict):
        items = [(k, _form(v)) for k, v in value.items()]
        if not all(isinstance(k, str) for k, _ in items):
            return object()
        items.sort(key=_first)  # equal dicts may list their keys in another order
        return (_DICT, tuple(items))
    if isinstance(value, list):
        return (_LIST, tuple([_form(v) for v in value]))
    if isinstance(value, tuple):
        return (_TUPLE, tuple([_form(v) for v in value]))
    return object()


_WIDE: Final = 1 << 60


def _first(item: tuple[str, object]) -> str:
    return item[0]


def wire(m: Message) -> int:
    """The fingerprint of what a renderer may pass on of a message beside its text: the
    raws of the message, its parts and its calls (a format may build a message from
    several wire items), and its name."""
    return hash((_form(m.raw), m.name, tuple([_form(p.raw) for p in m.parts]),
                 tuple([_form(c.raw) for c in m.tool_calls])))


def wires(messages: Sequence[Message]) -> int:
    return hash(tuple([wire(m) for m in messages]))


class Tails:
    """One entry per agent loop in progress (an entry that was carried on from is
    dropped), holding at most ``max_bytes`` (see ``Trimmed``), the entry stored longest
    ago going first. Entries are kept under their key's fingerprint."""

    def __init__(self, max_bytes: int = 32 << 20) -> None:
        self._entries: dict[int, Trimmed] = {}
        self._bytes = 0
        self._max = max_bytes
        # Large requests are compacted in worker threads: eviction walks the dict.
        self._lock = threading.Lock()
        self._usage = CacheUsage()

    @property
    def usage(self) -> CacheUsage:
        """Lookups (a call's tail found or not), tails let go, and the bytes held;
        entries: the agent loops in progress this process knows."""
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
        found = self._entries.get(hash(key))
        if found is None or found.count != len(sources) or found.wires != wires(sources):
            return None
        return found

    def put(self, key: Key, trimmed: Trimmed, replaces: Key | None) -> None:
        kept = hash(key)
        with self._lock:
            if replaces is not None:
                self._drop(hash(replaces))
            self._drop(kept)
            self._entries[kept] = trimmed
            self._bytes += trimmed.size
            # The newest stays: its loop calls again next.
            while self._bytes > self._max and len(self._entries) > 1:
                self._drop(next(iter(self._entries)))
                self._usage.evicted += 1

    def _drop(self, key: int) -> None:
        gone = self._entries.pop(key, None)
        if gone is not None:
            self._bytes -= gone.size

    def __len__(self) -> int:
        return len(self._entries)
