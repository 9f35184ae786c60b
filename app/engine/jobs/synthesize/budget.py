"""A token budget: the output never has more tokens than the caller allows.

Below the budget ``/synthesize`` compacts as it always does. Past it, the oldest turns
condense into one digest (the ledger of what they did: files written, commands run, the
failure not since fixed, and what the user said in them) and the strategy compacts the
turns after it; the fewer turns condensed, the better, so the cut is the first of a few
evenly spaced points that fits. The points follow from the transcript alone, so the cut
stays where it is from call to call until the output grows past the budget again: the
digest and what follows it up to the recent turns are the same bytes meanwhile, and a
provider's cache keeps serving them. A newest turn larger than the budget has its
results and arguments cut, with handles; only what must stay (the system prompt, the task
and the newest user message) alone past the budget is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from app.engine.compaction.base import Compaction, StrategyContext, cut_text, span_of
from app.engine.compaction.ledger import build_ledger
from app.engine.compaction.notes import render_ledger
from app.engine.compaction.tiers import TierBudget
from app.engine.errors import BudgetTooSmall
from app.engine.prompts import DIGEST_HEADER, DIGEST_USER
from app.engine.reading.outcomes import shorten
from app.engine.transcript.model import Message, Part, calls_by_result

# The cut is tried at this many evenly spaced points over the turns, at most: few enough
# that the search stays cheap, many enough that a cut keeps most of what fits.
CUT_POINTS = 16
# A user's words in the digest, at most (their message is behind the digest's handle).
_USER_CHARS = 400
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
# agent uses most. Chosen on the long sessions of the tune split (eval --long).
RECENT_SHARE = 0.75


def filled(budget: TierBudget, tokens: int) -> TierBudget:
    """The tier's budget with its recent window (and the turns that close a block) grown
    to a share of ``tokens`` where that is more than the tier keeps."""
    recent = int(tokens * RECENT_SHARE)
    if recent <= budget.window_tokens:
        return budget
    return replace(budget, window_tokens=recent, closing_tokens=recent)


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


def cut_points(turns: int) -> list[int]:
    """How many of the oldest turns a cut may condense, fewest first: evenly spaced
    over the turns (the newest always kept), each a multiple of the same step, so a
    point stays a point as the run grows by a turn."""
    if turns < 2:
        return []
    step = max(1, -(-turns // CUT_POINTS))
    step = 1 << (step - 1).bit_length()  # a power of two: points stay as the run grows
    return [k for k in range(step, turns, step)] or [turns - 1]


def condensed(messages: Sequence[Message], head_stop: int, cut_at: int, compact: Compact,
              context: StrategyContext, *, bare: bool = False) -> Compaction:
    """The turns from ``cut_at`` on as the strategy compacts them, after a digest of the
    turns before them (``bare``: its header and handle only, for the smallest budgets)."""
    region = messages[head_stop:cut_at]
    span = span_of("summarized", region, context.handles)
    parts = _digest(region, context, span.handle)
    digest = Message("user", parts[:1] if bare else parts)
    compaction, _ = compact([*messages[:head_stop], *messages[cut_at:]])
    out = compaction.messages
    shift = 1  # the digest, after the head
    return Compaction(
        (*out[:head_stop], digest, *out[head_stop:]), (span, *compaction.spans),
        (*region, *compaction.dropped), settled=len(region),
        stable=_shifted(compaction.stable, head_stop, shift),
        steady=_shifted(compaction.steady, head_stop, shift),
        noted=_shifted(compaction.noted, head_stop, shift))


def _shifted(at: int | None, head_stop: int, shift: int) -> int | None:
    if at is None:
        return head_stop + shift
    return at + shift if at >= head_stop else at


def _digest(region: Sequence[Message], context: StrategyContext, handle: str,
            ) -> tuple[Part, ...]:
    turns = sum(1 for m in region if m.role == "assistant")
    lines = [DIGEST_HEADER.format(turns=turns, handle=handle)]
    results = calls_by_result(region)
    answered = {id(call): m for m in region if m.role == "tool"
                for call in [results.get(id(m))] if call is not None}
    pairs = [(c, answered.get(id(c))) for m in region for c in m.tool_calls]
    ledger = build_ledger(pairs, context.calls, context.outcomes)
    if ledger:
        lines.extend(render_ledger(ledger).split("\n"))
    lines.extend(DIGEST_USER.format(text=shorten(" ".join(m.text.split()), _USER_CHARS))
                 for m in region if m.role == "user" and m.text.strip())
    return tuple(Part("text", line) for line in lines)


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
