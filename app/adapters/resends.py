"""JSON request bodies parsed once per conversation, not once per call.

An agent in a loop sends its whole transcript on every step: the body of a call is
the body of the last one with a message or two more. Parsing it whole each time was
the largest cost HTTP added to a warm call (about 0.45 ms for the corpus's 74 KB
average body, a fifth of the engine's own time). ``Resends`` remembers recent bodies
with their parsed messages and, when a body starts with the messages of one it
remembers, parses only what follows them.

Reuse is decided on bytes, never guessed:
- the remembered body's messages are located in it by writing each parsed message
  back with orjson and finding exactly those bytes at its place (a client that
  writes JSON differently, with spaces or escaped non-ASCII, simply gets no reuse,
  from the first message that differs);
- a new body reuses the first n messages only when its bytes up to the end of the
  n-th are the remembered body's bytes, as their fingerprints say (below);
- the key ``"messages":[`` must occur once in the remembered body, and not at all in
  what the new body adds, so the array is the top-level conversation and no later
  duplicate key could replace it.
The rest of the body (the new messages and every other field) is parsed as it is,
with the reused bytes cut out of it. The value is what ``jsoncodec.loads_fast`` gives
for the whole body; the tests hold the two equal over random edits and resends.

A remembered body keeps its parsed messages and, instead of its bytes, where each
message ends and a fingerprint of each message's bytes (with what precedes it, from the
previous end): a new body reuses the first n messages only when its bytes at those
places have the same fingerprints. The fingerprint is Python's hash of the bytes: 64
bits, keyed by a secret drawn for each process, so a different message passes for a
remembered one with a chance of about one in 10^19, and no caller can make one pass on
purpose (``memo`` rests on the same hash). The bytes, a third of what a body held, are
kept only until its messages are located: at once for a body read on from a remembered
one (its reused messages are located already), and for a body read whole when a later
body could reuse its messages, so one-off calls pay nothing for it. One instance per
process, used from the event loop only; the bound is on what the remembered bodies
hold: their parsed messages, the offsets and fingerprints, and bytes not yet located.
"""

from __future__ import annotations

from array import array
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import orjson

from app.adapters.jsoncodec import Unread, loads_fast
from app.adapters.jsonsteps import STEP_BYTES, loads_in_steps
from app.engine.footprint import footprint
from app.engine.memo import CacheUsage

_KEY = b'"messages":['
# Smaller bodies parse in a few microseconds: remembering them would not pay.
MIN_BYTES = 16_384
# Bodies are grouped by their first bytes, which hold the system prompt and, unless the
# prompt is longer, the task: agents of one kind running side by side share a prompt
# and differ by their task. A body is compared with the few remembered under its start.
_START = MIN_BYTES
_PER_START = 8


class _Body:
    """A remembered body: its parsed messages, where its array begins, and, once its
    messages are located (when a later body first could reuse them), the end of each
    message and its fingerprint (``marks``: the hash of the bytes from the previous end,
    or from the body's first byte, to this one's); its bytes until then. Its size is
    what it holds: those, and the parsed messages (``footprint``), each message measured
    once, by the first body that parsed it (``weights``: the running total after each
    message)."""

    __slots__ = ("_total", "_unique", "body", "ends", "marks", "messages", "size", "start",
                 "weights")

    def __init__(self, body: bytes, messages: list[Any], start: int, *,
                 ends: array[int] | None = None, marks: array[int] | None = None,
                 weights: array[int] | None = None) -> None:
        self.body: bytes | None = body
        self.weights = weights if weights is not None else array("q")
        total = self.weights[-1] if self.weights else 0
        for m in messages[len(self.weights):]:
            total += footprint(m)
            self.weights.append(total)
        self._total = total
        self.messages = messages
        self.start = start
        # Built on an earlier body, the messages it reused are located already, and
        # the key occurs once by construction (see ``Resends.loads``).
        self.ends = ends if ends is not None else array("q")
        self.marks = marks if marks is not None else array("q")
        self._unique = ends is not None
        self.size = 0
        self._measure()

    def _measure(self) -> None:
        # Three 8-byte numbers a message (end, fingerprint, weight), and the bytes kept.
        held = len(self.body) if self.body is not None else 0
        self.size = held + self._total + 8 * (len(self.ends) + len(self.marks)
                                              + len(self.weights))

    def located(self) -> array[int]:
        """The end of each message, from the first, as far as orjson writes them byte
        for byte as the body has them; the bytes are let go (``size`` falls)."""
        body = self.body
        if body is not None:
            if self._unique or body.count(_KEY) == 1:
                known = len(self.ends)
                pos = self.ends[-1] + 1 if self.ends else self.start
                _locate(body, pos, self.messages[known:], self.ends)
                prev = self.ends[known - 1] if known else 0
                for end in self.ends[known:]:
                    self.marks.append(hash(body[prev:end]))
                    prev = end
            else:
                self.ends = array("q")
                self.marks = array("q")
            self.body = None  # the fingerprints stand for the bytes from here on
            self._measure()
        return self.ends

    def repeated(self, body: bytes, seen: dict[tuple[int, int], int]) -> int:
        """How many of the leading messages (located) ``body`` repeats byte for byte: its
        bytes at their places have their fingerprints. ``seen``: the new body's
        fingerprints already taken, by place (bodies that share a start share them)."""
        prev = n = 0
        size = len(body)
        for end, mark in zip(self.ends, self.marks, strict=True):
            if end > size:
                break
            place = (prev, end)
            found = seen.get(place)
            if found is None:
                found = seen[place] = hash(body[prev:end])
            if found != mark:
                break
            n += 1
            prev = end
        return n


class Resends:
    def __init__(self, max_bytes: int = 64 << 20, max_depth: int | None = None) -> None:
        self._max_bytes = max_bytes
        # Only what a body adds is parsed, so only that is measured for depth: the
        # reused messages were measured when their body was read.
        self._max_depth = max_depth
        self._bytes = 0
        self._by_start: OrderedDict[bytes, list[_Body]] = OrderedDict()
        self._usage = CacheUsage()

    @property
    def usage(self) -> CacheUsage:
        """Bodies read on from one remembered (hits) or whole (misses), bodies let go,
        and the bytes held."""
        u = self._usage
        u.held = self._bytes
        u.entries = len(self)
        return u

    async def read(self, body: bytes) -> Any:
        """``loads``, but a large body that carries on no remembered conversation is read
        a piece at a time, the event loop serving other requests between pieces
        (``jsonsteps``), and then remembered as ``loads`` would."""
        if len(body) > STEP_BYTES and body[:_START] not in self._by_start:
            value = await loads_in_steps(body, self._max_depth)
            return self._loads(body, lambda: value)
        return self.loads(body)

    def loads(self, body: bytes) -> Any:
        """The body as ``loads_fast`` reads it (UNREAD and NestedTooDeep included), or,
        where only its caution says UNREAD, its value: a run of 19 digits in a reused
        message's string beside a float in what is new is no integer orjson changed,
        and the reused messages were read exactly (a body orjson might have changed is
        never remembered)."""
        return self._loads(body, lambda: loads_fast(body, self._max_depth))

    def _loads(self, body: bytes, whole: Callable[[], Any]) -> Any:
        """``loads``, ``whole`` giving the body's value as ``loads_fast`` reads it where
        no remembered body is reused (the one place a large body is read whole)."""
        # A body past an eighth of the bound is parsed whole and not remembered: it would
        # push out the conversations of many agents and hold its memory after its call.
        if not MIN_BYTES <= len(body) <= self._max_bytes // 8:
            return whole()
        start = body[:_START]
        known = self._by_start.get(start, [])
        base, reused = self._best(known, body)
        value = _spliced(body, base, reused, self._max_depth) if base is not None else None
        # A body that repeats all of another's messages carries on its conversation and
        # takes its place; one that shares only the first few (another agent with the
        # same prompt, or an edited history) is remembered beside it.
        replaced = base if base is not None and reused == len(base.ends) else None
        if value is not None and base is not None:
            self._usage.hits += 1
            new = _Body(body, list(value["messages"]), base.start, ends=base.ends[:reused],
                        marks=base.marks[:reused], weights=base.weights[:reused])
            # Its new messages located now, at the cost of writing them alone: the body
            # it was read on from let its bytes go, and so does this one.
            new.located()
        else:
            self._usage.misses += 1
            value = whole()
            if isinstance(value, Unread) or not isinstance(value, dict):
                return value
            messages = value.get("messages")
            at = body.find(_KEY)
            if not isinstance(messages, list) or at < 0:
                return value
            new = _Body(body, list(messages), at + len(_KEY))
        self._remember(start, known, replaced, new)
        return value

    def __len__(self) -> int:
        return sum(len(v) for v in self._by_start.values())

    def _best(self, known: list[_Body], body: bytes) -> tuple[_Body | None, int]:
        """The remembered body whose leading messages this one repeats, and how many. (A
        message is an object: the bytes that follow its closing brace are the new
        body's.)"""
        seen: dict[tuple[int, int], int] = {}
        first = 0
        for i, b in enumerate(known):
            size = b.size
            ends = b.located()
            self._bytes += b.size - size  # its bytes let go, if it still held them
            n = b.repeated(body, seen) if ends else 0
            if n and n == len(ends):
                return b, n  # the usual case: the last call's body and more
            if i == 0:
                first = n
        # The agent changed an earlier message: the longest run of them that is the same,
        # in the conversation that called last (the others would each cost a search).
        return (known[0], first) if first else (None, 0)

    def _remember(self, start: bytes, known: list[_Body], replaced: _Body | None,
                  new: _Body) -> None:
        # One entry per conversation in progress, not one per step, the latest first.
        others = [b for b in known if b is not replaced]
        kept = [new, *others[: _PER_START - 1]]
        gone = [b for b in known if not any(b is k for k in kept)]
        self._usage.evicted += sum(b is not replaced for b in gone)
        self._bytes += new.size - sum(b.size for b in gone)
        if start not in self._by_start:
            self._bytes += len(start)
        self._by_start[start] = kept
        self._by_start.move_to_end(start)
        while self._bytes > self._max_bytes and self._by_start:
            key, dropped = self._by_start.popitem(last=False)
            self._bytes -= len(key) + sum(b.size for b in dropped)
            self._usage.evicted += len(dropped)


def _locate(body: bytes, pos: int, messages: list[Any], ends: array[int]) -> None:
    """``ends`` extended by the ends of ``messages`` written out from ``pos`` on, as long
    as the body has exactly those bytes there, each followed by a comma or the array's
    end."""
    for m in messages:
        try:
            written = orjson.dumps(m)
        except orjson.JSONEncodeError:
            return
        end = pos + len(written)
        if not body.startswith(written, pos) or body[end : end + 1] not in (b",", b"]"):
            return
        ends.append(end)
        pos = end + 1


def _spliced(body: bytes, base: _Body, reused: int, max_depth: int | None,
             ) -> dict[str, Any] | None:
    """The body parsed with its first ``reused`` messages taken from ``base``, or None
    when only a whole parse can say what it holds."""
    if not reused:
        return None
    end = base.ends[reused - 1]
    # A comma: more messages follow; anything else (the array's end, or a space a
    # writer put there) is read as it is, and a body that then does not parse is read
    # whole.
    rest = body[end + 1 :] if body[end : end + 1] == b"," else body[end:]
    # The key occurs once in the reused bytes (``located`` checked); with no "messages"
    # key in the rest, at any depth, the array is the conversation and nothing later in
    # the body replaces it. (The key has no comma or brace, so it cannot straddle.)
    if _KEY[:-1] in rest:
        return None
    value = loads_fast(body[: base.start] + rest, max_depth)
    if not isinstance(value, dict) or not isinstance(value.get("messages"), list):
        return None
    value["messages"] = base.messages[:reused] + value["messages"]
    return value
