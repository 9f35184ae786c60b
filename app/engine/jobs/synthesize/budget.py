"""A token budget: the output never has more tokens than the caller allows.

Below the budget ``/synthesize`` compacts as it always does. Past it, the oldest turns
condense into one digest (the ledger of what they did: files written, commands run, the
failure not since fixed, and what the user said in them) and the strategy compacts the
turns after it. The cut may fall only at a few points: where the turns' running total of
tokens reaches each multiple of an eighth of the budget, so a point stays a point as the
run grows.

A digest that moves rewrites everything after it, which a provider's cache then misses,
so the cut moves in steps (hysteresis): the run is read in strides of twice the budget,
and at the start of each stride the cut is set to condense the run as it was then down to
85% of the budget (as far as the points go when the recent turns a given budget keeps
whole take more). Through the stride the cut stays there, the output growing only at its
end, until the run outgrows the budget with it: then it moves on as at a stride's start,
down to 85% again. Past the first anchor (every few budgets of the run, like the points)
the digest is in two parts, the turns up to the last anchor and the turns from there to
the cut, so that a move between anchors leaves the older part as it was sent; the user's
newest words, when the digest takes them, end the older part instead and stay whole
between the two. These choices rest on the transcript alone (the service keeps no state),
so every call of a stride makes them the same way. A newest turn larger than the budget
has its results and arguments cut, with handles; only what must stay (the system prompt,
the task and the newest user message) alone past the budget is refused.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from app.engine.compaction.base import Compaction, Span, StrategyContext, cut_text, span_of
from app.engine.compaction.ledger import build_ledger, subjects_of
from app.engine.compaction.notes import render_ledger
from app.engine.compaction.tiers import TierBudget
from app.engine.errors import BudgetTooSmall
from app.engine.prompts import (
    DIGEST_EARLIER,
    DIGEST_FAILURES,
    DIGEST_HEADER,
    DIGEST_NAMES,
    DIGEST_SINCE,
    DIGEST_USER,
)
from app.engine.reading.outcomes import shorten
from app.engine.transcript.model import Message, Part, ToolCall, calls_by_result

# A cut point falls each time the turns' running total of tokens grows by this share of
# the budget, so a move of the cut lands within about that share below its target. A
# quarter served while the cut moved a point at a time; landing on TARGET_SHARE, an
# eighth kept more on tune's long sessions (mini-swe-agent at 8k, 32k and 128k: 37.9%,
# 67.6% and 87.5% of the facts the agent went on to use, against 37.1%, 67.1% and 87.5%
# with a quarter, at a target of 80%; a sixteenth gave 38.3%, 67.6% and 87.5%).
POINT_SHARE = 0.125
# The hysteresis (module docstring): the stride, in the turns' tokens, and the share of
# the budget a move of the cut condenses the run down to, at a stride's start and
# whenever the run outgrows the budget within it. Against moving the cut whenever the
# output passes the budget, the strides cut the cost under caching at 32k from 45% to
# 27% of sending everything, at the same recall. Replayed call by call on tune's long
# sessions, moving down to the target within a stride as at its start (see strides; the
# cut had moved just far enough to fit, and passed the budget again a call or two later),
# with the user's words between the digest's parts (see condensed), took prefix reuse at
# 8k from 81.4% to 88.3% on mini-swe-agent and from 68.3% to 73.0% on OpenCode, at 32k
# on OpenCode from 85.6% to 87.8%. A lower target moves less often, but sends less: at
# 70% recall fell 0.9 and 3.2 points at 8k and 32k on mini-swe-agent (a mean output 14%
# smaller at 32k); at 85% it is where it was there (38.6%, 68.9% and 87.5% at 8k, 32k
# and 128k) and 0.9 points lower on OpenCode at 8k (12.1%), whose steps are an eighth
# of that budget.
STRIDE_SHARE = 2.0
TARGET_SHARE = 0.85
# The digest in two parts, so that a move of the cut leaves most of it as it was: the
# turns up to the last anchor before the cut (where the turns' running total reaches a
# multiple of this share of the budget), then the turns from there to the cut. The
# older part changes only when the cut passes an anchor; a move between anchors
# rewrites the newer part alone, and the provider's cache keeps serving the older one.
# Chosen on tune's long sessions, replayed call by call (every call after the one before
# it): prefix reuse at 8k went from 79.2% to 81.0%, 81.2%, 81.3% and 81.4% on
# mini-swe-agent with anchors every 1, 2, 4 and 8 budgets, and from 61.6% to 66.0%,
# 67.3%, 68.4% and 68.8% on OpenCode (whose sessions have no system prompt, so the
# digest leads the output); at 32k on OpenCode 85.2% to 85.6-85.7% at each. The recall
# of eval --long stayed within 0.3 points at every budget. Past four the gain flattens
# while the newer part, rewritten at every move, takes more turns.
ANCHOR_SHARE = 4.0
# Past the stride's first point, the points tried one at a time before bisecting.
NEAR_STEPS = 4
# A user's words in the digest, at most (their message is behind the digest's handle),
# and the newest messages of theirs it quotes: in a session of many requests, the older
# ones are done with, and a line each would grow the digest past any small budget.
_USER_CHARS = 400
_USER_LINES = 3
# The digest's list of what failed in the turns it took (each distinct failure line,
# newest first) holds at most this share of the budget, at four characters a token.
# Chosen on tune's long session (eval --long): the digest had kept only the failure not
# since fixed, 9% and 27% of the failure lines at 8k and 32k; with the list, every one,
# at the same recall (failure lines name the files and functions the agent goes on to
# use), for 4 points more cost under caching at 32k (a larger digest moves the cut more
# often). A twentieth kept two thirds of them at 8k.
FAILURE_SHARE = 0.1
# The digest's list of the names the agent worked with in the turns it took (see
# ``reading.names``) holds at most this share of the budget, at four characters a token.
# Chosen on tune's long sessions (eval --long), on a first version: a twentieth and a
# tenth took mini-swe-agent's recall at 32k from 56.0% to 66.1% and 70.7%, and OpenCode's
# from 24.6% to 28.6% and 32.0%; three twentieths scored higher still at 8k, but past a
# tenth the list crowds out the recent turns for names ever less used. Measured again
# with the results' names in, three twentieths and a fifth scored higher still wherever
# a digest shows (mini-swe-agent at 8k: 38.3% at a tenth, 41.8%, 43.8%), but the score
# counts the very words the list is made of, not what the recent turns it displaces
# say besides.
NAMES_SHARE = 0.1
# Numbers standing alone in a failure line (``[242:29]``, ``line 58``, ``code 1``), not
# those inside a name (``m13``, ``v1.2``): see ``_failure_lines``.
_DIGITS = re.compile(r"(?<![\w.])\d+")
# The shortest a cut result or argument of the newest turn is made, in characters.
_LEAST_CHARS = 200


@dataclass(frozen=True, slots=True)
class Budget:
    """``tokens``: the most the output may have (None: no bound); ``trigger``: at or below
    it the conversation goes back exactly as it came (None: always compacted); ``fill``:
    the caller gave the budget, and the recent turns whole take a share of it (a cap the
    service sets from the model's window only bounds what ``fast`` sends as it is)."""

    tokens: int | None
    trigger: int | None = None
    fill: bool = True


# With a budget the caller gave, the recent turns are kept whole up to this share of it
# (then older turns close into notes as before): a bigger budget keeps more of what an
# agent uses most. Chosen on the long sessions of the tune split (eval --long). Three
# quarters had been kept while the digest listed no failures (the whole budget then lost
# half the failure lines at 32k); with the list, the whole budget keeps 5.4 and 3.0
# points more at 128k (mini-swe-agent, OpenCode), the same at 8k and 32k, and costs less
# under caching (the cut moves less often: 63% to 52% of sending everything at 128k).
# A quarter more than the budget kept more at 128k but lost 0.6 points at 32k.
RECENT_SHARE = 1.0


# With a budget the caller gave, a result in the recent turns keeps up to this share of
# it (in characters, at four a token) where the tier would cut it shorter: the turns are
# the ones an agent uses most, and a bigger budget keeps more of each.
RESULT_SHARE = 1 / 16


def filled(budget: TierBudget, tokens: int) -> TierBudget:
    """The tier's budget with its recent window (and the turns that close a block) grown
    to a share of ``tokens``, and its recent results kept longer, where that is more than
    the tier keeps."""
    recent = int(tokens * RECENT_SHARE)
    if recent <= budget.window_tokens:
        return budget
    chars = int(tokens * 4 * RESULT_SHARE)
    return replace(budget, window_tokens=recent, closing_tokens=recent,
                   tail_result_chars=max(budget.tail.result_chars, chars))


# A strategy's compaction of some messages, read with their own context.
Compact = Callable[[Sequence[Message]], tuple[Compaction, StrategyContext]]
Count = Callable[[Sequence[Message]], int]


def must_keep(messages: Sequence[Message], head_stop: int) -> list[Message]:
    """The head (system prompt and task) and the newest user message after it."""
    kept = list(messages[:head_stop])
    newest = next((m for m in reversed(messages[head_stop:]) if m.role == "user"), None)
    if newest is not None:
        kept.append(newest)
    return kept


def check_fits(messages: Sequence[Message], head_stop: int, budget: int, count: Count) -> None:
    needed = count(must_keep(messages, head_stop))
    if needed > budget:
        raise BudgetTooSmall(
            f"the system prompt, the task and the newest user message alone take {needed} "
            f"tokens, past 'budget_tokens' {budget}; send a budget of at least {needed} "
            "tokens (the model's window allowing), or a shorter system prompt.",
            pointer="/budget_tokens")


def cut_points(sizes: Sequence[int], tokens: int) -> list[int]:
    """How many of the oldest turns a cut may condense, fewest first, given each turn's
    tokens: where their running total first reaches each multiple of POINT_SHARE of the
    budget (the newest turn always kept). A point depends on the turns up to it alone, so
    it stays a point as the run grows."""
    return _crossings(sizes[:-1], max(1, int(tokens * POINT_SHARE)))


def stride_start(sizes: Sequence[int], tokens: int) -> int:
    """How many turns the run had when its current stride began (0: still in the first):
    the last turn at which the turns' running total reached a multiple of STRIDE_SHARE of
    the budget."""
    crossed = _crossings(sizes, max(1, int(tokens * STRIDE_SHARE)))
    return crossed[-1] if crossed else 0


def anchor_points(sizes: Sequence[int], tokens: int) -> list[int]:
    """The turn counts where the digest's older part may end, fewest first: where the
    turns' running total first reaches each multiple of ANCHOR_SHARE of the budget (the
    newest turn always kept). Like a cut point, an anchor stays one as the run grows."""
    if ANCHOR_SHARE <= 0:
        return []
    return _crossings(sizes[:-1], max(1, int(tokens * ANCHOR_SHARE)))


@dataclass(frozen=True, slots=True)
class Grid:
    """Where a run's cut may fall (``points``) and where the digest's older part may end
    (``anchors``), each as a count of the oldest turns."""

    points: list[int]
    anchors: list[int]

    def anchor(self, point: int) -> int:
        """The last anchor at or before a cut of ``point`` turns (0: none)."""
        at = bisect_right(self.anchors, point)
        return self.anchors[at - 1] if at else 0


def grid(sizes: Sequence[int], tokens: int) -> Grid:
    """The run's grid for a budget of ``tokens``, given each turn's tokens."""
    return Grid(cut_points(sizes, tokens), anchor_points(sizes, tokens))


def _crossings(sizes: Sequence[int], step: int) -> list[int]:
    """The turn counts at which the running total of ``sizes`` first reaches each
    multiple of ``step`` (one count however many multiples a large turn passes)."""
    out: list[int] = []
    total, mark = 0, step
    for k, size in enumerate(sizes, 1):
        total += size
        if total >= mark:
            out.append(k)
            mark = (total // step + 1) * step
    return out


def fingerprints(messages: Sequence[Message], stops: Sequence[int]) -> list[int]:
    """A hash of what ``messages[:stop]`` say (roles, texts, calls and what they answer)
    for each of ``stops`` (ascending), in one pass over the messages: the same for the
    same run sent again, in this process."""
    out: list[int] = []
    running = 0
    at = 0
    for stop in stops:
        for m in messages[at:stop]:
            running = hash((running, m.role, m.text, m.tool_call_id, m.is_error,
                            tuple((c.name, c.arguments) for c in m.tool_calls)))
        at = max(at, stop)
        out.append(running)
    return out


def first_fitting(fits: Callable[[int], bool], low: int, high: int) -> int | None:
    """The first of ``low``..``high`` that ``fits`` (which holds from some point on:
    condensing more never makes the output larger), by bisection; None when none does."""
    found = None
    while low <= high:
        middle = (low + high) // 2
        if fits(middle):
            found, high = middle, middle - 1
        else:
            low = middle + 1
    return found


def first_fitting_near(fits: Callable[[int], bool], low: int, high: int) -> int | None:
    """:func:`first_fitting`, for an answer likely near ``low``: ``low``, then steps that
    double, then a bisection between the last two tried. A move within a stride lands a
    few points past the cut before it, where a bisection over the whole run would try a
    dozen points, each a compaction of the run."""
    before, at, step = low - 1, low, 1  # before: the last point tried that did not fit
    while at <= high:
        if fits(at):
            found = first_fitting(fits, before + 1, at - 1)
            return at if found is None else found
        if at == high:
            break
        before, at, step = at, min(at + step, high), step * 2
    return None


@dataclass(frozen=True, slots=True)
class Condensed:
    """A run with its oldest turns condensed: the output, and whether the strategy closed
    blocks into notes in the turns after the digest."""

    compaction: Compaction
    noted: bool


@dataclass(frozen=True, slots=True)
class _Older:
    """The digest's older part as written once: its span and lines, and the failure
    lines' room it left (what it listed, and the characters left)."""

    span: Span
    lines: tuple[str, ...]
    chars: int
    shapes: frozenset[str]


# The older parts a call wrote, by the messages they take and where the user's newest
# words stand among the condensed ones (-1: none): every cut point a call tries after
# one anchor (or after the user's words) has the same older part, which is written once.
Olders = dict[tuple[int, int], _Older]


def condensed(messages: Sequence[Message], head_stop: int, cut_at: int, compact: Compact,
              context: StrategyContext, *, tokens: int, anchor_at: int | None = None,
              bare: bool = False, olders: Olders | None = None) -> Condensed:
    """The turns from ``cut_at`` on as the strategy compacts them, after a digest of the
    turns before them, for a budget of ``tokens``: in two parts when the user's newest
    words are among them (the words whole between the parts), else when ``anchor_at`` (a
    message index after the head, before ``cut_at``) splits them (see ANCHOR_SHARE).
    ``bare``: the digest's headers and handles only, for the smallest budgets;
    ``olders``: the older parts written by the call's earlier tries, kept there."""
    region = messages[head_stop:cut_at]
    # The user's newest words stay whole: in a long session they are the request the
    # agent is working on now (a new task, a correction), which a line of the digest
    # would cut to its start. They end the digest's older part, where they were said, so
    # the turns before them, and they, are sent as they were while the cut moves on (after
    # the whole digest, a move rewrote them: a mini-swe-agent task is 1,400 tokens, and
    # tune's chained session kept 3.6 points more of its prefix at 8k, call after call).
    words = _newest_words(messages[head_stop:], len(region))
    at_words = next((i for i, m in enumerate(region) if m is words), -1)
    if at_words >= 0:
        parts_of = [region[:at_words], region[at_words + 1:]]
    else:
        split = anchor_at - head_stop if anchor_at is not None and head_stop < anchor_at \
            else 0
        parts_of = [region[:split], region[split:]] if 0 < split < len(region) else [region]
    # The names are ranked over every condensed turn, and listed in the last part: the
    # newest turns weigh most in the ranking, so the list changes with every move.
    names = context.names.in_use([m for m in region if m is not words],
                                 int(tokens * NAMES_SHARE * 4) - len(DIGEST_NAMES))
    # The failure lines' room is spent part by part, the older first: what it lists
    # stays as it was while the cut moves between anchors.
    failures = _Listed(int(tokens * FAILURE_SHARE * 4))
    last = max((n for n, part in enumerate(parts_of) if part), default=0)

    def written(n: int, part: Sequence[Message], first: bool) -> tuple[Span, list[str]]:
        span = span_of("summarized", part, context.handles)
        header = (DIGEST_HEADER if first else DIGEST_SINCE).format(
            turns=sum(1 for m in part if m.role == "assistant"), handle=span.handle)
        return span, _digest(part, context, header, failures, names if n == last else ())

    spans: list[Span] = []
    inserted: list[Message] = []
    lines_of: list[Part] = []  # the digest's lines since the last message it made
    for n, part in enumerate(parts_of):
        if part or len(parts_of) == 1:
            first = not spans
            # Kept for the call's other tries when a newer part follows (the last part
            # lists the names, ranked over the whole region).
            if n == 0 and last == 1 and olders is not None:
                key = (len(part), at_words)
                if key not in olders:
                    span, lines = written(n, part, first)
                    olders[key] = _Older(span, tuple(lines), failures.chars,
                                         frozenset(failures.shapes))
                older = olders[key]
                span, lines = older.span, list(older.lines)
                failures.chars, failures.shapes = older.chars, set(older.shapes)
            else:
                span, lines = written(n, part, first)
            spans.append(span)
            lines_of.extend(Part("text", line) for line in (lines[:1] if bare else lines))
        if n == 0 and words is not None:
            # Between the parts, where they were said: the digest is then two messages.
            if lines_of:
                inserted.append(Message("user", tuple(lines_of)))
                lines_of = []
            inserted.append(words)
    if lines_of:
        inserted.append(Message("user", tuple(lines_of)))
    compaction, _ = compact([*messages[:head_stop], *messages[cut_at:]])
    out = compaction.messages
    shift = len(inserted)  # the digest's parts (and the user's newest words), after the head
    return Condensed(Compaction(
        (*out[:head_stop], *inserted, *out[head_stop:]), (*spans, *compaction.spans),
        # Dropped again in this order on later calls: the region up to the user's newest
        # words (once newer ones come, those join the digest at their place).
        (*(m for m in region if m is not words), *compaction.dropped),
        settled=at_words if at_words >= 0 else len(region),
        stable=_shifted(compaction.stable, head_stop, shift),
        steady=_shifted(compaction.steady, head_stop, shift),
        noted=_shifted(compaction.noted, head_stop, shift)), compaction.noted is not None)


def _newest_words(after_head: Sequence[Message], condensed: int) -> Message | None:
    """The user's newest message when it lies in the first ``condensed`` messages (the
    region a digest takes), else None (it stays where it is, among the recent turns)."""
    for i in range(len(after_head) - 1, -1, -1):
        m = after_head[i]
        if m.role == "user" and m.text.strip():
            return m if i < condensed else None
    return None


def _shifted(at: int | None, head_stop: int, shift: int) -> int | None:
    if at is None:
        return head_stop + shift
    return at + shift if at >= head_stop else at


class _Listed:
    """The failure lines the digest's parts listed so far, and the room left for more."""

    def __init__(self, chars: int) -> None:
        self.chars = chars
        self.shapes: set[str] = set()  # each line with its numbers as 0 (see _DIGITS)


def _digest(region: Sequence[Message], context: StrategyContext, header: str,
            failures: _Listed, names: Sequence[str]) -> list[str]:
    """A part of the digest: ``header``, then the ledger of ``region``, its failure lines
    not listed yet (as many as ``failures`` has room for), ``names`` and what the user
    said."""
    lines = [header]
    results = calls_by_result(region)
    answered = {id(call): m for m in region if m.role == "tool"
                for call in [results.get(id(m))] if call is not None}
    pairs = [(c, answered.get(id(c))) for m in region for c in m.tool_calls]
    ledger = build_ledger(pairs, context.calls, context.outcomes)
    if ledger:
        lines.extend(render_ledger(ledger).split("\n"))
    failed = _failure_lines(region, results, context, failures)
    if failed:
        lines.append(DIGEST_FAILURES)
        lines.extend(f"  {line}" for line in failed)
    if names:
        lines.append(DIGEST_NAMES + ", ".join(names))
    said = [m for m in region if m.role == "user" and m.text.strip()]
    if len(said) > _USER_LINES:
        lines.append(DIGEST_EARLIER.format(n=len(said) - _USER_LINES))
    lines.extend(DIGEST_USER.format(text=shorten(" ".join(m.text.split()), _USER_CHARS))
                 for m in said[-_USER_LINES:])
    return lines


def _failure_lines(region: Sequence[Message], results: Mapping[int, ToolCall],
                   context: StrategyContext, listed: _Listed) -> list[str]:
    """The distinct failure lines of the region's failed results, as many as ``listed``
    has room for: first those of failures not since fixed (no later call of the region
    touching the same command or file succeeded), then the fixed ones, each newest
    first. The ledger names only the newest failure; these say what else is broken and
    what was tried and ruled out, the broken first: a long session's fixed failures
    (a type checker's report after each edit, cleared by the next) had filled the list
    and left out the failures still open. Lines that differ only in their numbers (the
    same error at ``[242:29]`` and ``[243:29]``) are one, the newest. ``results``: the
    call each result of the region answers, by the result's id."""
    succeeded: set[str] = set()  # what a call after the one at hand touched and passed
    open_lines: list[str] = []
    fixed_lines: list[str] = []
    for m in reversed(region):
        call = results.get(id(m)) if m.role == "tool" else None
        if call is None:
            continue
        subjects = subjects_of(call, context.calls.of(call))
        outcome = context.outcomes.of(m)
        if not outcome.error:
            succeeded.update(subjects)
            continue
        (fixed_lines if subjects & succeeded else open_lines).extend(outcome.quoted_lines())
    out: list[str] = []
    for line in (*open_lines, *fixed_lines):
        shape = _DIGITS.sub("0", line)
        if line and shape not in listed.shapes and len(line) + 3 <= listed.chars:
            listed.shapes.add(shape)
            out.append(line)
            listed.chars -= len(line) + 3  # its indent and line break
    return out


def squeezed(compaction: Compaction, budget: int, count: Count,
             context: StrategyContext) -> Compaction:
    """The output with the newest turn's results and arguments cut, shorter each round,
    until it fits (handles name what was cut); as far as it goes when nothing more can
    be cut."""
    messages = list(compaction.messages)
    start = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=-1)
    if start < 0:
        return compaction
    originals = messages[start:]
    limit = max(_LEAST_CHARS, max(len(m.text) for m in originals) // 2)
    while count(messages) > budget:
        messages[start:] = [_cut(m, limit, context) for m in originals]
        if limit == _LEAST_CHARS:
            break
        limit = max(_LEAST_CHARS, limit // 2)
    cut = [m for m, now in zip(originals, messages[start:], strict=True)
           if m.role == "tool" and now is not m]
    spans = tuple(span_of("truncated", [m], context.handles) for m in cut)
    return replace(compaction, messages=tuple(messages), spans=(*compaction.spans, *spans),
                   dropped=(*compaction.dropped, *cut))


def _cut(message: Message, limit: int, context: StrategyContext) -> Message:
    if message.role == "tool" and len(message.text) > limit:
        handle = span_of("truncated", [message], context.handles).handle
        others = tuple(p for p in message.parts if p.kind != "text")
        return replace(message, parts=(Part("text", cut_text(message.text, limit, handle)),
                                       *others))
    if message.role == "assistant" and any(len(c.arguments) > limit
                                           for c in message.tool_calls):
        return replace(message, tool_calls=tuple(context.calls.cut(c, limit)
                                                 for c in message.tool_calls))
    return message
