"""What every compaction strategy shares: its interface, spans, handles, trimming."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from app.engine.compaction.tiers import TierBudget
from app.engine.memo import CacheUsage, Memo
from app.engine.prompts import CUT_MARKER, JSON_MARKER
from app.engine.reading.answers import JSON_CHARS, json_lines
from app.engine.reading.calls import CallSummaries, CallSummary
from app.engine.reading.gist import Gists
from app.engine.reading.names import Names
from app.engine.reading.outcomes import Outcomes
from app.engine.reading.repeats import LineMemo, Shown
from app.engine.reading.salient import SalientLines
from app.engine.transcript.model import Message, Part, Segments, ToolCall, calls_by_result

HANDLE_PREFIX = "cs_"
# A handle is 64 bits of a hash, in decimal: it is in every cut marker and note footer,
# and cl100k reads twenty digits as 7 tokens where twenty hex digits took 11. Handles
# are looked up per tenant: a million live ones collide with a chance of 3e-8.
_HANDLE_BYTES = 8
_HANDLE_DIGITS = 20  # of 2**64 - 1
HANDLE_CHARS = len(HANDLE_PREFIX) + _HANDLE_DIGITS


# Made per call, result or span: __init__ is written out so that mypyc compiles it (see
# transcript.Message). Treated as a value.
@dataclass(init=False)
class Span:
    """Messages a compaction replaced or cut, and the handle that names the original."""

    handle: str
    kind: str  # "compacted" | "summarized" | "truncated" | "masked"
    first: int  # wire index of the first message
    last: int
    messages: int
    tools: tuple[str, ...]
    # What the handle gives back; not part of the response.
    originals: tuple[Message, ...] = field(repr=False, compare=False)

    def __init__(self, handle: str, kind: str, first: int, last: int, messages: int,
                 tools: tuple[str, ...], originals: tuple[Message, ...] = ()) -> None:
        self.handle = handle
        self.kind = kind
        self.first = first
        self.last = last
        self.messages = messages
        self.tools = tools
        self.originals = originals


@dataclass(frozen=True, init=False)  # made per call: see transcript.Transcript
class Compaction:
    messages: tuple[Message, ...]
    spans: tuple[Span, ...]
    # Originals of what was removed, scanned for facts the output lost.
    dropped: tuple[Message, ...]
    # How many leading ``dropped`` messages the same strategy drops again, in the same
    # order, once the transcript has grown (older turns stay older). Only a hint for
    # caches: a wrong value costs time, never a wrong receipt.
    settled: int
    # How many leading messages stay the same bytes on every later call while the agent
    # only appends (a provider's cache keeps them), and how many until the strategy next
    # moves older turns into its notes; None: the strategy does not say (the head only).
    stable: int | None
    steady: int | None
    # Leading messages through the last note: what a later closing keeps unless a note
    # ages (a place for a cache breakpoint between stable and steady); None: none.
    noted: int | None

    def __init__(self, messages: tuple[Message, ...], spans: tuple[Span, ...] = (),
                 dropped: tuple[Message, ...] = (), settled: int = 0,
                 stable: int | None = None, steady: int | None = None,
                 noted: int | None = None) -> None:
        object.__setattr__(self, "messages", messages)
        object.__setattr__(self, "spans", spans)
        object.__setattr__(self, "dropped", dropped)
        object.__setattr__(self, "settled", settled)
        object.__setattr__(self, "stable", stable)
        object.__setattr__(self, "steady", steady)
        object.__setattr__(self, "noted", noted)


_ROLE_BYTES = {role: role.encode() for role in ("system", "user", "assistant", "tool")}
Hasher = hashlib.blake2b


class Handles:
    """Stable names for spans: the same content gives the same handle on any replica."""

    def __init__(self, *, cache_bytes: int = 16 << 20) -> None:
        self._memo: Memo[str, bytes] = Memo(cache_bytes, fingerprinted=True)

    @property
    def usage(self) -> CacheUsage:
        return self._memo.usage

    @staticmethod
    def _digest(text: str) -> bytes:
        return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()

    def of(self, messages: Sequence[Message]) -> str:
        h = self.start()
        self.feed(h, messages)
        return self.name(h)

    @staticmethod
    def start() -> Hasher:
        return hashlib.blake2b(digest_size=_HANDLE_BYTES)

    @staticmethod
    def name(h: Hasher) -> str:
        return HANDLE_PREFIX + str(int.from_bytes(h.digest(), "big")).zfill(_HANDLE_DIGITS)

    def feed(self, h: Hasher, messages: Iterable[Message]) -> None:
        """Hash more messages into ``h``: a span can be named a step at a time."""
        update, digest, memo = h.update, self._digest, self._memo
        for m in messages:
            # Everything a note or an expand reads from the messages goes in, so equal
            # handles mean equal content.
            update(_ROLE_BYTES[m.role])
            text = m.text
            update(memo.get(text, digest) if text else b"-")
            if m.tool_call_id is not None or m.is_error:
                update(f"{m.tool_call_id}\0{m.is_error}".encode("utf-8", "surrogatepass"))
            for call in m.tool_calls:
                update(f"{call.id}\0{call.name}".encode("utf-8", "surrogatepass"))
                update(memo.get(call.arguments, digest))


@dataclass(frozen=True, init=False)  # made per call: see transcript.Transcript
class StrategyContext:
    budget: TierBudget
    segments: Segments
    handles: Handles
    calls: CallSummaries
    outcomes: Outcomes
    # Tokens of some messages (the service's counter, memoized); None: windows by turns.
    tokens: Callable[[Sequence[Message]], int] | None
    lines: LineMemo
    salient: SalientLines
    gists: Gists
    names: Names

    def __init__(self, budget: TierBudget, segments: Segments, handles: Handles,
                 calls: CallSummaries, outcomes: Outcomes,
                 tokens: Callable[[Sequence[Message]], int] | None = None,
                 lines: LineMemo | None = None, salient: SalientLines | None = None,
                 gists: Gists | None = None, names: Names | None = None) -> None:
        object.__setattr__(self, "budget", budget)
        object.__setattr__(self, "segments", segments)
        object.__setattr__(self, "handles", handles)
        object.__setattr__(self, "calls", calls)
        object.__setattr__(self, "outcomes", outcomes)
        object.__setattr__(self, "tokens", tokens)
        object.__setattr__(self, "lines", LineMemo() if lines is None else lines)
        object.__setattr__(self, "salient", SalientLines() if salient is None else salient)
        object.__setattr__(self, "gists", Gists() if gists is None else gists)
        object.__setattr__(self, "names", Names() if names is None else names)

    def with_budget(self, budget: TierBudget) -> StrategyContext:
        """The same context under another budget (``dataclasses.replace`` does this by
        introspection, interpreted: 1% of a warm call)."""
        return StrategyContext(budget, self.segments, self.handles, self.calls, self.outcomes,
                               self.tokens, self.lines, self.salient, self.gists, self.names)


class Strategy(Protocol):
    name: str

    def compact(self, messages: Sequence[Message], context: StrategyContext) -> Compaction: ...


def span_of(kind: str, messages: Sequence[Message], handles: Handles) -> Span:
    tools = tuple(dict.fromkeys(c.name for m in messages for c in m.tool_calls))
    first, last = wire_range(messages)
    return Span(handles.of(messages), kind, first, last, len(messages), tools,
                tuple(messages))


def wire_range(messages: Sequence[Message]) -> tuple[int, int]:
    """The first and last wire messages of a region, for its span: a result made for an
    edit block in an agent's text (see ``lifting``) has no wire index, and may end one."""
    first = next((m.index for m in messages if m.index >= 0), messages[0].index)
    last = next((m.index for m in reversed(messages) if m.index >= 0), messages[-1].index)
    return first, last


def cut_text(text: str, limit: int, handle: str, keep: Sequence[str] = ()) -> str:
    """Keep the head and the tail (errors and results tend to sit at the end), and after
    the marker the ``keep`` lines from the middle (a failure line, salient lines). Both
    end at a line's end where one is near: a line cut in two reads as a fragment (``se
    backend.``, or half of a marker this service wrote) and says less than it costs."""
    head = _line_end(text, (limit * 2) // 3)
    tail = limit - (limit * 2) // 3
    start = text[:head]
    end = text[_line_start(text, len(text) - tail):] if tail else ""
    middle = [line for line in keep if line and line not in start and line not in end]
    removed = len(text) - len(start) - len(end) - sum(len(line) + 1 for line in middle)
    marker = CUT_MARKER.format(chars=removed, handle=handle)
    return "\n".join([start, marker, *middle, end])


def _line_end(text: str, at: int) -> int:
    """Where a head cut at ``at`` ends: at the line end nearest to it, within a quarter
    of the head either way (a long line is cut where it stands)."""
    return _nearest(text, at, at // 4, at)


def _line_start(text: str, at: int) -> int:
    """Where a tail from ``at`` starts: at the line start nearest to it, within a
    quarter of the tail either way."""
    if at <= 0:
        return at
    found = _nearest(text, at - 1, (len(text) - at) // 4, -1)
    return at if found < 0 else found + 1


def _nearest(text: str, at: int, reach: int, default: int) -> int:
    """The newline nearest to ``at`` within ``reach`` characters; ``default`` if none."""
    before = text.rfind("\n", max(at - reach, 0), at + 1)
    after = text.find("\n", at, at + reach + 1)
    if before < 0:
        return after if after >= 0 else default
    return after if after >= 0 and after - at < at - before else before


def result_chars(budget: TierBudget, call: CallSummary | None) -> int:
    """What a recent result keeps when it is cut, by what its call did. A file the agent
    read is what it goes on to edit, and a test run is read for its failure line, which
    is kept beside the budget, and its summary at the end. Measured with the eval, a
    read's cut lines held 2.6 points of recall per point of reduction, a test run's 0.5,
    other results 1.4: a third more for reads and half for test runs gave each tier 0.2
    points of recall at the same reduction."""
    limit = budget.result_chars
    if call is None:
        return limit
    if call.runs_tests:
        return limit // 2
    if call.reads and not call.writes:
        return limit * 4 // 3
    return limit


def cut_result(message: Message, context: StrategyContext, original: Message,
               limit: int) -> tuple[Message, Span | None]:
    """``message`` cut to about ``limit`` characters, with its failure line or its
    salient lines; the span (and the handle in the marker) name ``original``, the message
    as the caller sent it."""
    text = message.text
    outcome = context.outcomes.of(original)
    # At least what a note gives it: local's 200 characters held a flight or two.
    fields = _as_fields(text, max(limit, JSON_CHARS)) if not outcome.error else None
    if fields is not None:
        span = span_of("truncated", [original], context.handles)
        shown = f"{fields}\n{JSON_MARKER.format(chars=len(text), handle=span.handle)}"
        if len(shown) * 3 <= len(text) * 2:  # with its marker, it saves a third
            others = tuple(p for p in message.parts if p.kind not in ("text", "thinking"))
            return replace(message, parts=(Part("text", shown), *others)), span
    # A result is cut only when that saves a third of it: the cut form replaces the
    # whole one a call after it was sent (the newest result goes whole), so it is sent
    # again at full price, with a marker, which a small saving does not pay for.
    if len(text) * 2 <= limit * 3:
        return message, None
    span = span_of("truncated", [original], context.handles)
    keep = outcome.quoted_lines() if outcome.error \
        else context.salient.of(text, limit // 3, outcome.line)
    cut = cut_text(text, limit, span.handle, keep)
    if len(cut) >= len(text):  # just over the budget: the marker would cost more
        return message, None
    others = tuple(p for p in message.parts if p.kind not in ("text", "thinking"))
    return replace(message, parts=(Part("text", cut), *others)), span


def _as_fields(text: str, limit: int) -> str | None:
    """A JSON result as the lines of its objects' fields (see ``answers.json_lines``)
    within ``limit``; None if it is no JSON object or list. Its head and tail would be
    a fragment of its syntax, and an API's answer (a flight search, a list of records)
    says its facts in its values: shown as fields, a little more of what agents used
    later stays in the eval, in fewer tokens."""
    if not text.startswith(("{", "[")):
        return None
    lines = json_lines(text, limit)
    return "\n".join(lines) if lines else None


def trim_turn(
    messages: Sequence[Message], context: StrategyContext, shown: Shown, *, newest: bool
) -> tuple[list[Message], list[Span], list[Message]]:
    """A kept turn: runs of lines ``shown`` above collapsed and long arguments and results
    cut, but the ``newest`` turn's result, which the agent acts on next, stays whole."""
    out: list[Message] = []
    spans: list[Span] = []
    dropped: list[Message] = []
    answered = calls_by_result(messages) if not newest else {}
    for m in messages:
        if m.role == "tool":
            call = answered.get(id(m))
            limit = result_chars(context.budget,
                                 context.calls.of(call) if call is not None else None)
            new, span = _result(m, context, shown, newest, limit)
        else:
            new, span = cut_reasoning(m, context)
            calls = tuple(_call(c, context, shown) for c in m.tool_calls)
            if any(a is not b for a, b in zip(calls, m.tool_calls, strict=True)):
                new = replace(new, tool_calls=calls)
        # What a later message may point back to: this one as the output shows it.
        shown.add(new.text)
        for call in new.tool_calls:
            shown.add_arguments(call.arguments)
        if new is not m:
            spans.append(span or span_of("truncated", [m], context.handles))
            dropped.append(m)
        out.append(new)
    return out, spans, dropped


def _result(message: Message, context: StrategyContext, shown: Shown,
            newest: bool, limit: int) -> tuple[Message, Span | None]:
    if newest:
        return message, None
    text = message.text
    collapsed = shown.collapse(text)
    new = message
    if collapsed is not text:
        others = tuple(p for p in message.parts if p.kind not in ("text", "thinking"))
        new = replace(message, parts=(Part("text", collapsed), *others))
    return cut_result(new, context, message, limit)


def cut_reasoning(message: Message, context: StrategyContext) -> tuple[Message, Span | None]:
    """The text an agent wrote beside its calls, past the tier's reasoning budget, as its
    gist (the sentences that name something or state a cause, plan or decision) and a
    marker with the handle. It is cut the same way from the first call that sends it, the
    newest turn's included, so it reads the same on every later call: the eval finds the
    whole text the least used part of the recent turns for its tokens. A reply to the
    user (no calls) stays whole, and thinking and other blocks are never touched."""
    limit = context.budget.reasoning_chars
    if not limit or not message.tool_calls or message.role != "assistant":
        return message, None
    texts = [p.text for p in message.parts if p.kind == "text" and p.text]
    length = sum(len(t) for t in texts) + len(texts) - 1
    if length <= limit:
        return message, None
    span = span_of("truncated", [message], context.handles)
    said = context.gists.of("\n".join(texts), limit)
    marker = CUT_MARKER.format(chars=length - len(said), handle=span.handle)
    cut = f"{said} {marker}" if said else marker
    # Cut only when that saves a third, as a result is: the marker's handle is twenty
    # digits, dense in tokens, and a gist that saved a few characters made the message
    # longer in tokens; the output then outgrew the input on one call and went back as
    # it came, to be cut again on the next, and the provider's cache missed both times.
    if len(cut) * 3 > length * 2:
        return message, None
    parts: list[Part] = []
    for p in message.parts:
        if p.kind != "text":
            parts.append(p)
        elif cut:  # the gist takes the first text part's place (and its wire block)
            parts.append(Part("text", cut, p.raw))
            cut = ""
    return replace(message, parts=tuple(parts)), span


def _call(call: ToolCall, context: StrategyContext, shown: Shown) -> ToolCall:
    """Arguments with repeats collapsed (the newest turn's too: what it wrote anew stays,
    and its arguments then read the same on later calls), then cut if still long."""
    arguments = shown.collapse_arguments(call.arguments)
    collapsed = call if arguments == call.arguments else replace(call, arguments=arguments)
    return context.calls.cut(collapsed, context.budget.argument_chars)
