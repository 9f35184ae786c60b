"""Facts an agent may need later: paths, identifiers, numbers and error lines.

The receipt lists facts that were in dropped text and are nowhere in the
output, so a caller can see what compaction cost. This runs on every call
over most of the input, so the work is shaped for speed:
- texts become sets of candidate tokens in one pass over their UTF-8 bytes (see
  ``factscan``); only tokens with a digit, a slash or a dot are kept;
- older turns, which later calls drop again, are read once per agent run and
  remembered under a hash of their texts; other texts are memoized one by one;
  so is the part of the output that comes back on the next call;
- only lost tokens are classified, each distinct token once.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Container, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final, TypeVar

from app.engine.footprint import BYTES_HEADER, footprint
from app.engine.memo import CacheUsage, Memo, Recent, shares
from app.engine.pacing import breathe
from app.engine.reading.factscan import (
    MOST_FACTS,
    Kinds,
    error_lines,
    full,
    marked_lines,
    raw_tokens,
)

T = TypeVar("T")

# New settled texts up to this many are read one by one through the per-text memo.
_FEW = 16
# How far back a call looks for the end of the run an earlier call cached.
_PROBE = 64
# Error lines times characters of kept lines past which lost errors are found by line,
# not by search (about 20 ms of searching).
_SEARCH_CHARS = 50_000_000
# Error lines searched between two breaths (see ``pacing``): a search may run over
# megabytes of marked lines.
_PACE_LINES = 63
# Texts of a run read at once are joined up to this many characters: one scan of many
# short texts, without a copy of a whole 15 MB run beside it.
_JOINED_CHARS = 1 << 20


# Facts and _Settled are made on every call: __init__ is written out so that mypyc
# compiles it (see transcript.Transcript).
@dataclass(frozen=True, init=False)
class Facts:
    paths: frozenset[str]
    identifiers: frozenset[str]
    numbers: frozenset[str]
    errors: frozenset[str]
    # False when the texts held more candidate facts than are read
    # (``factscan.MOST_FACTS``, of the dropped text and of the kept): the facts are
    # then those of what was read, and may miss some lost ones or name some kept.
    complete: bool

    def __init__(self, paths: frozenset[str] = frozenset(),
                 identifiers: frozenset[str] = frozenset(),
                 numbers: frozenset[str] = frozenset(),
                 errors: frozenset[str] = frozenset(), complete: bool = True) -> None:
        object.__setattr__(self, "paths", paths)
        object.__setattr__(self, "identifiers", identifiers)
        object.__setattr__(self, "numbers", numbers)
        object.__setattr__(self, "errors", errors)
        object.__setattr__(self, "complete", complete)

    def __len__(self) -> int:
        return len(self.paths) + len(self.identifiers) + len(self.numbers) + len(self.errors)


# The facts of a settled run that an output lacks, by kind, as texts.
Lost = tuple[frozenset[str], frozenset[str], frozenset[str]]


# A settled run's facts by kind (paths, identifiers, numbers): their tokens, whose texts
# are decoded only for an output that lacks them.
Raw = tuple[tuple[bytes, ...], tuple[bytes, ...], tuple[bytes, ...]]


@dataclass(frozen=True, init=False)
class _Settled:
    """Facts and error lines of a run of dropped texts that later calls drop too, and
    what its other tokens were. Its facts are sorted once, so a call only checks which of
    them the output still holds: before, every call sorted every token of the run again.

    Kept small, as one is kept per agent run in progress: its facts' tokens once (their
    texts decoded for an output that lacks them, not kept beside them), and its other
    tokens (most of a run's: dotted names, versions, URLs) as one byte string, not a set
    of objects. A call that extends the run gets its whole token set back (``tokens``),
    so it reads what it did when the set was kept (how many there are, which are new);
    the others only need the facts and the count. At 1,000 agents of 176 KB bodies an
    entry went from 141 KB to about a third of that."""

    texts: int
    count: int  # the run's distinct candidate tokens (up to ``MOST_FACTS``, see ``full``)
    others: bytes  # its tokens that are no fact, joined by newlines (a separator: none holds one)
    errors: frozenset[str]
    facts: Raw
    keys: frozenset[bytes]  # the facts' tokens, of every kind
    # What an output lacks, by which of the facts it holds: calls within a block send
    # the same notes, which hold the same few facts, and find the answer here.
    lost: dict[frozenset[bytes], Lost] = field(compare=False)
    # The bytes of the facts' tokens and the error lines, summed as the run grew
    # (measuring the sets whole on every call would cost a warm call its savings).
    items: int = field(compare=False)

    def __init__(self, texts: int, count: int, others: bytes, errors: frozenset[str],
                 facts: Raw | None = None, keys: frozenset[bytes] = frozenset(),
                 lost: dict[frozenset[bytes], Lost] | None = None, items: int = 0) -> None:
        object.__setattr__(self, "items", items)
        object.__setattr__(self, "texts", texts)
        object.__setattr__(self, "count", count)
        object.__setattr__(self, "others", others)
        object.__setattr__(self, "errors", errors)
        object.__setattr__(self, "facts", ((), (), ()) if facts is None else facts)
        object.__setattr__(self, "keys", keys)
        object.__setattr__(self, "lost", {} if lost is None else lost)

    def tokens(self) -> frozenset[bytes]:
        """Every candidate token of the run: its facts' and the others."""
        if self.count == len(self.keys):
            return self.keys
        return self.keys.union(self.others.split(b"\n"))

    def size(self) -> int:
        """Bytes it holds: its objects and its containers' tables."""
        return self.items + sys.getsizeof(self.others) + sys.getsizeof(self.errors) + \
            sys.getsizeof(self.keys) + sum([sys.getsizeof(kind) for kind in self.facts])


# How the extractor's bytes are spread over its caches, by what an agent's next call
# reads: its run's settled facts first (a run let go is read again whole on its next
# call, 2 ms: at 1,000 agents of bench --load --agents --from-step 30, 141 KB an agent
# while a run kept its tokens as a set, and reading runs again was most of what those
# calls cost past the same calls with every run kept, timed in process; as ``_Settled``
# keeps them now, 52 KB, and the share holds 1,000 of them with a sixth to spare), then
# the recurring part's tokens (19 KB an agent, one entry each) and the kept texts' (40
# KB an agent, a text read again for 10 us: they keep most of them). Marked and error
# lines and the token kinds' table hold a few KB an agent.
_SHARES: Final = {"settled": 0.46, "tokens": 0.23, "recurring": 0.17, "marked": 0.07,
                  "errors": 0.02, "kinds": 0.05}

# A recurring part's entry beside its set: its object, its empty table of answers, and
# its slot among the entries.
_RECURRING_BYTES: Final = 384

_LOST_KEPT = 4
# A recurring part's answers kept per error line: only where its marked lines are
# longer than this (a shorter search costs what a lookup does), and at most this many.
_SEARCH_KEPT_CHARS = 256
_SHOWS_KEPT = 16_384


class _Recurring:
    """The part of an output that comes again on the next call (the head and the notes):
    how many texts it has, their tokens, and which error lines its marked lines hold,
    each error line searched for once. Not the texts: they are the caller's (its system
    prompt and task among them), which an entry kept alive for each agent after its call,
    uncounted; a call hands its own in where they are read (``shows``)."""

    def __init__(self, count: int, tokens: frozenset[bytes]) -> None:
        self.count = count
        self.tokens = tokens
        self._marked: str | None = None
        self._shows: dict[str, bool] = {}

    def shows(self, error: str, marked: Memo[str, str], texts: Sequence[str]) -> bool:
        """Whether the marked lines of ``texts``, this part's texts as the call sent
        them, hold ``error`` (see ``lost``)."""
        known = self._shows.get(error)
        if known is None:
            if self._marked is None:
                self._marked = "\n".join([marked.get(t, marked_lines) for t in texts])
            known = error in self._marked
            # Remembered where a search costs more than a lookup, and up to a bound: a
            # log of a hundred thousand error lines made this table, kept beside the
            # run's, a third the size of its 15 MB request.
            if len(self._marked) > _SEARCH_KEPT_CHARS and len(self._shows) < _SHOWS_KEPT:
                self._shows[error] = known
        return known


def _merged(base: frozenset[T], texts: list[str], memo: Memo[str, frozenset[T]],
            read: Callable[[str], frozenset[T]]) -> frozenset[T]:
    """``base`` and the set of each text (the memo's, or ``read``) together, one text's set
    alive at a time: a union of them all at once held every text's set and its hash
    table, more memory than the body on a 15 MB request of error lines. Texts past a
    ``full`` set are not read."""
    if not texts or full(base):
        return base
    if not base and len(texts) == 1:
        return memo.get(texts[0], read)
    merged = set(base)
    for text in texts:
        merged |= memo.get(text, read)
        if full(merged):
            break
    return frozenset(merged)


def _read_joined(base: frozenset[T], texts: list[str],
                 read: Callable[[str], frozenset[T]]) -> frozenset[T]:
    """``base`` and what ``read`` finds in ``texts``, read joined a megabyte at a time
    (tokens and error lines live within a line), until the set is ``full``."""
    if full(base):
        return base
    merged = set(base)
    start = 0
    while start < len(texts) and not full(merged):
        end, chars = start, 0
        while end < len(texts) and (end == start or chars + len(texts[end]) <= _JOINED_CHARS):
            chars += len(texts[end]) + 1
            end += 1
        merged |= read("\n".join(texts[start:end]))
        start = end
    return frozenset(merged)


def _unshown(found: frozenset[str], again: _Recurring, texts: Sequence[str],
             marked: Memo[str, str], output: Container[str]) -> frozenset[str]:
    """The error lines of ``found`` that neither the recurring part nor ``output`` shows.
    Each is a search of text in C: on a log of error lines, hundreds of thousands."""
    shown: list[str] = []
    for n, error in enumerate(found):
        if n & _PACE_LINES == _PACE_LINES:
            breathe()
        if again.shows(error, marked, texts) or error in output:
            shown.append(error)
    # Most often none or most are shown: the set as it is, or a small one anew.
    return found.difference(shown) if shown else found


class FactExtractor:
    """``cache_bytes``: what its memos hold together, in bytes (see ``footprint``)."""

    def __init__(self, *, cache_bytes: int = 128 << 20) -> None:
        share = shares(cache_bytes, _SHARES)
        self._tokens: Memo[str, frozenset[bytes]] = Memo(share["tokens"], fingerprinted=True)
        self._errors: Memo[str, frozenset[str]] = Memo(share["errors"], fingerprinted=True)
        self._marked: Memo[str, str] = Memo(share["marked"], fingerprinted=True)
        self._kinds = Kinds(share["kinds"])
        # Keyed by the hash of the run's texts; a process-local cache, so Python's
        # seeded str hash is enough. An entry holds a run's token set (up to a few MB
        # for the longest runs), and there is one per agent run in progress.
        self._settled: Recent[int, _Settled] = Recent(share["settled"])
        # The tokens of the part of an output that recurs (see ``_held``), by the hash
        # of its texts: one entry per agent run in progress, as ``_settled``.
        self._recurring: Recent[int, _Recurring] = Recent(share["recurring"])
        self._lock = threading.Lock()

    def usage(self) -> dict[str, CacheUsage]:
        """How each of its caches serves (``CacheUsage``); the token kinds' held bytes only."""
        kinds = CacheUsage()
        kinds.held = self._kinds.held
        return {"fact_tokens": self._tokens.usage, "error_lines": self._errors.usage,
                "marked_lines": self._marked.usage, "token_kinds": kinds,
                "settled_runs": self._settled.usage, "recurring_texts": self._recurring.usage}

    def lost(self, dropped: Sequence[str], kept: Sequence[str], *, settled: int = 0,
             recurring: int = 0) -> Facts:
        """Facts of the dropped texts that occur nowhere in the kept ones.

        The first ``settled`` dropped texts are the ones a longer transcript with
        the same start drops too (older turns): what they hold is remembered for
        the whole run, so the next call reads only what is new. The first ``recurring``
        kept texts come again on the next call (the head and the notes): the tokens
        they hold are remembered too.
        """
        run = self._settle([t for t in dropped[:settled] if t])
        fresh = [t for t in dropped[settled:] if t]
        tokens, errors = self._tokens, self._errors
        recurs = [t for t in kept[:recurring] if t]
        again = self._held(recurs)
        held_before = again.tokens
        rest = [t for t in kept[recurring:] if t]
        # Lists, not generators, as star-arguments: compiled, a generator is an object
        # driven through the interpreter's protocol.
        held = _merged(frozenset(), rest, tokens, raw_tokens)
        new = _merged(frozenset(), fresh, tokens, raw_tokens)
        # Only sets that reached the bound may lack facts (see ``factscan.MOST_FACTS``).
        complete = not (run.count >= MOST_FACTS or full(run.errors) or full(held_before)
                        or full(held) or full(new))
        # The run's facts are answered by ``_run_lost``; its other tokens that come again
        # here are sorted again (``Kinds`` knows them) and are no fact.
        new = new.difference(run.keys, held_before, held)
        paths, idents, numbers = _run_lost(run, held_before, held)
        if new:
            more = self._kinds.sort(new)
            paths = paths.union(more[0].values())
            idents = idents.union(more[1].values())
            numbers = numbers.union(more[2].values())
        found = _merged(run.errors, fresh, errors, error_lines)
        complete = complete and not full(found)
        facts = Facts(paths, idents, numbers)
        if found:
            # An error line often survives inside a note line; only report real losses.
            # A line holding one holds a marker, so the output's marked lines suffice.
            # An error line has no newline, so it is in the joined marked lines when it
            # is in those of the recurring part or in those of the rest: the first
            # answer is remembered with the part, a search of its text per error line
            # and call being most of the receipt's time on a long run.
            marked = self._marked
            output = "\n".join([marked.get(t, marked_lines) for t in rest])
            if len(found) * len(output) <= _SEARCH_CHARS:
                found = _unshown(found, again, recurs, marked, output)
            else:
                # Thousands of error lines against megabytes of kept lines: a search per
                # line took seconds on one request (it grows as their product). Kept
                # verbatim, an error line is a line of the output; only a note's copy
                # inside a longer line goes unseen, and is reported lost.
                found = _unshown(found, again, recurs, marked,
                                 _lines_among(output, found))
        return Facts(facts.paths, facts.identifiers, facts.numbers, found, complete)

    def _held(self, texts: list[str]) -> _Recurring:
        """``texts``, the part of an output that recurs from call to call, with their
        tokens: their union is most of what a call would build anew, over every line of
        every note (profiled, the largest single cost of a call on a resent transcript)."""
        if not texts:
            return _Recurring(0, frozenset())
        key = tuple(texts)
        at = hash(key)
        found = self._recurring.get(at)
        if found is not None and found.count == len(key):
            return found
        held = _merged(frozenset(), texts, self._tokens, raw_tokens)
        made = _Recurring(len(key), held)
        # The tokens are the memo's (counted there); this entry holds the set's table,
        # its own object and its table of answers.
        size = sys.getsizeof(held) + _RECURRING_BYTES
        with self._lock:
            self._recurring.put(at, made, size)
        return made

    def _settle(self, texts: list[str]) -> _Settled:
        # A tuple of strings hashes from their cached hashes, in C. The run cached by
        # the last call usually ends a step or two before this one: probe back that far.
        run = tuple(texts)
        base, base_key = _Settled(0, 0, b"", frozenset()), None
        for n in range(len(run), max(len(run) - _PROBE, 0), -1):
            key = hash(run[:n])
            hit = self._settled.get(key)
            if hit is not None and hit.texts == n:
                base, base_key = hit, key
                break
        rest = texts[base.texts :]
        if not rest:
            return base
        known = base.tokens()
        if len(rest) <= _FEW:  # a step or two: these were kept text last call, and cached
            tokens = _merged(known, rest, self._tokens, raw_tokens)
            errors = _merged(base.errors, rest, self._errors, error_lines)
            # Settled, their tokens and error lines are the run's now: a later call of
            # this run reads them from its entry, never one by one again, so their own
            # entries (and their marked lines, read while they were kept) go, leaving the
            # room to texts a next call reads (at 1,000 agents in progress the memos held
            # every settled text's set beside its run's, and missed the tails').
            for text in rest:
                self._tokens.discard(text)
                self._errors.discard(text)
                self._marked.discard(text)
        else:
            # Read joined: nothing is kept per text of a run no later call reads again.
            tokens = _read_joined(known, rest, raw_tokens)
            errors = _read_joined(base.errors, rest, error_lines)
        fresh = tokens.difference(known)
        added = self._kinds.sort(fresh)
        items = base.items + _bytes_of(errors.difference(base.errors))
        # A step that brings no new fact (most do not) shares the run's sorted facts,
        # and what outputs lacked of them.
        if any(added):
            facts: Raw = (base.facts[0] + tuple(added[0]), base.facts[1] + tuple(added[1]),
                          base.facts[2] + tuple(added[2]))
            keys = base.keys.union(added[0], added[1], added[2])
            items += sum([_token_bytes(kind) for kind in added])
            lost: dict[frozenset[bytes], Lost] | None = None
        else:
            facts, keys, lost = base.facts, base.keys, base.lost
        others = b"\n".join(tokens.difference(keys)) if fresh else base.others
        settled = _Settled(len(texts), len(tokens), others, errors, facts, keys, lost, items)
        with self._lock:
            # The run that was extended is only a prefix of this one now: one entry per
            # agent run in progress, not one per step.
            if base_key is not None:
                self._settled.pop(base_key)
            self._settled.put(hash(run), settled, settled.size())
        return settled


def _run_lost(run: _Settled, held: frozenset[bytes], more: frozenset[bytes]) -> Lost:
    """The settled run's facts that neither ``held`` nor ``more`` hold, by kind."""
    hit = run.keys.intersection(held).union(run.keys.intersection(more))
    lost = run.lost.get(hit)
    if lost is None:
        # Decoded as ``Kinds`` decodes a fact's token: the texts it gives for new facts.
        kinds = [frozenset([raw.decode("utf-8", "replace") for raw in facts if raw not in hit])
                 for facts in run.facts]
        lost = (kinds[0], kinds[1], kinds[2])
        if len(run.lost) >= _LOST_KEPT:
            run.lost.clear()
        run.lost[hit] = lost
    return lost


def _lines_among(text: str, wanted: Container[str]) -> set[str]:
    """The lines of ``text`` that are in ``wanted``, made one at a time: a split of
    megabytes of short lines held every line at once."""
    found: set[str] = set()
    start = 0
    size = len(text)
    while start <= size:
        end = text.find("\n", start)
        if end < 0:
            end = size
        line = text[start:end]
        if line in wanted:
            found.add(line)
        start = end + 1
    return found


def _token_bytes(tokens: Iterable[bytes]) -> int:
    """``_bytes_of`` for byte strings, from their lengths: a run's tokens are many."""
    total = 0
    count = 0
    for token in tokens:
        total += len(token)
        count += 1
    return total + BYTES_HEADER * count


def _bytes_of(objects: Iterable[object]) -> int:
    total = 0
    for o in objects:
        total += footprint(o)
    return total
