"""``/compress-history``: older messages become one sectioned summary, recent ones stay.

The cut keeps the last ``keep_last_n`` messages and moves back so that no
tool result is parted from its call. With a token budget, the output never passes it:
the cut moves forward, keeping fewer of the last messages (a call never parted from its
result either), until the summary and what stays fit. User and system messages keep their
order and the summary block follows them, so no request appears after the work
that answered it. A summary block from an earlier call is updated with only the
messages after it (anchored, incremental), so a call costs what is new.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from app.engine.compaction.base import Span, StrategyContext, span_of
from app.engine.compaction.deep import PROMPT_CHARS
from app.engine.compaction.evidence import render_evidence
from app.engine.compaction.ledger import build_ledger
from app.engine.compaction.lifting import Lifted, lift
from app.engine.compaction.notes import groups, render_ledger
from app.engine.compaction.runs import Runs
from app.engine.errors import BudgetTooSmall, InvalidTranscript
from app.engine.jobs.accounting import account
from app.engine.jobs.caches import EngineCaches
from app.engine.jobs.synthesize.synthesizer import check_output
from app.engine.prompts import (
    HISTORY_FIRST,
    HISTORY_HEADER,
    HISTORY_MARKER,
    HISTORY_SECTIONS,
    HISTORY_SYSTEM,
    HISTORY_UPDATE,
    PromptMessage,
    fence,
)
from app.engine.reading.calls import validate
from app.engine.reading.facts import Facts
from app.engine.reading.outcomes import shorten
from app.engine.transcript.model import (
    Message,
    Part,
    Transcript,
    call_results,
    segment,
)
from app.engine.transcript.tokens import TokenCounter

_CONSTRAINT = re.compile(r"\b(must|must not|never|always|only|don't|do not|prefer|please|"
                         r"should|without|instead|no more than|at least|at most)\b",
                         re.IGNORECASE)
_MAX_LINES = 45
# Of the lines under a note's line (its code, its result's lines), what an entry of the
# summary keeps (see ``_entry``).
_UNDER_CHARS = 200
_MAX_SHORT = 8
# Every distinct error stays (an agent must not retry what failed, and the failure says
# why), up to a bound for runs that fail hundreds of times.
_MAX_ERRORS = 40
# What "Completed work" gives up first when it is full: reads that found what they found
# (a later read finds it again), then other calls; the agent's own words (diagnoses,
# decisions), failures and changes last.
_READ = re.compile(r"^- (?:bash: (?:cat|sed -n|grep|egrep|find|ls|head|tail|wc|nl|pwd|cd|"
                   r"echo|tree|git (?:status|log|show|diff|grep))\b|(?:read|view|open|list|"
                   r"get|search|find|grep|glob|ls|cat|fetch|lookup|browse)\w*: )")
_CHANGE = re.compile(r"\[(?:wrote|defines|edited|created) |\bcat >|\bsed -i\b|"
                     r"\b(?:git apply|patch|write_file|edit_file|str_replace\w*|apply_patch)\b")
_LEFT_OUT = re.compile(r"^\(\+(\d+) ")


# The longest summary an LLM is asked for, in tokens (the reply's bound, and what a
# budget keeps room for when the LLM writes the summary).
SUMMARY_MAX_TOKENS = 2000
# Tries at cutting an LLM's summary to the room a budget leaves (the marker's length and
# the tokenizer can need a second one).
_CUT_ROUNDS = 4


@dataclass(frozen=True)
class HistoryOptions:
    trigger_messages: int = 50
    trigger_tokens: int | None = None
    keep_last_n: int = 10
    # The most tokens the output may have; past it the history is compressed whatever
    # the triggers say.
    budget_tokens: int | None = None


@dataclass(frozen=True)
class HistoryPlan:
    transcript: Transcript
    tokens_before: int
    reason: str  # why it will compress, or why not
    task: str
    start: int = 0  # messages[start:stop] are replaced by the new summary block
    stop: int = 0
    previous: Message | None = None  # the block an earlier call wrote, if any
    prompt: tuple[PromptMessage, ...] = ()
    # The messages as the notes read them: an agent's text actions as calls, and the
    # observations that answered them as their results (see compaction.lifting).
    lifted: Lifted | None = None
    budget_tokens: int | None = None

    @property
    def fired(self) -> bool:
        return self.stop > self.start

    @property
    def span(self) -> tuple[Message, ...]:
        """The messages the summary must cover: what is new since the previous block,
        text actions and their observations read as calls and results."""
        if self.lifted is None or not self.lifted.originals:
            return tuple(m for m in self.transcript.messages[self.start : self.stop]
                         if m is not self.previous)
        skip = self.previous.index if self.previous is not None else None
        out: list[Message] = []
        inside = False
        for m in self.lifted.messages:
            if m.index >= 0:  # a result made here for an edit block goes with its edit
                inside = self.start <= m.index < self.stop and m.index != skip
            if inside:
                out.append(m)
        return tuple(out)

    @property
    def foldable(self) -> frozenset[int]:
        """The user messages (as they came) that are a harness's observations."""
        return self.lifted.foldable if self.lifted is not None else frozenset()


@dataclass(frozen=True)
class HistoryResult:
    transcript: Transcript
    compressed: bool
    reason: str
    incremental: bool
    tokens_before: int
    tokens_after: int
    spans: tuple[Span, ...] = ()
    lost: Facts = field(default_factory=Facts)


class HistoryCompressor:
    def __init__(self, counter: TokenCounter, caches: EngineCaches) -> None:
        self._counter = counter
        self._caches = caches
        # Run summaries, as the notes keep them: an agent sends the same runs again. A
        # reply's code stays out of an entry: the history is the agent's own to extend,
        # and in the eval that code made it cost more than the history it replaced.
        self._runs = Runs(reply_code=False)

    def _context(self, messages: Sequence[Message]) -> StrategyContext:
        return self._caches.context(messages)

    def plan(self, transcript: Transcript, options: HistoryOptions,
             summary_tokens: int | None = None) -> HistoryPlan:
        """``summary_tokens``: the size of the summary to keep room for under a budget
        (an LLM's reply's bound); None: the deterministic summary, measured."""
        transcript = _unmerged(transcript)
        messages = transcript.messages
        if not messages:
            raise InvalidTranscript("the conversation is empty; send at least one message.")
        validate(messages, self._caches.calls)
        tokens = self._counter.messages(messages)
        seg = segment(messages)
        task = messages[seg.task_index].text if seg.task_index is not None else ""
        over_count = len(messages) > options.trigger_messages
        over_tokens = options.trigger_tokens is not None and tokens > options.trigger_tokens
        budget = options.budget_tokens
        over_budget = budget is not None and tokens > budget
        if not (over_count or over_tokens or over_budget):
            limit = f"{options.trigger_messages} messages"
            if options.trigger_tokens is not None:
                limit += f" or {options.trigger_tokens} tokens"
            return HistoryPlan(transcript, tokens, f"under the trigger: {len(messages)} "
                               f"messages and {tokens} tokens, below {limit}", task)
        head = seg.task_index + 1 if seg.task_index is not None else 0
        stop = max(len(messages) - options.keep_last_n, head)
        # keep_last_n 0 keeps nothing but what is always kept: stop is past the end.
        while head < stop < len(messages) and messages[stop].role == "tool":
            stop -= 1  # never part a tool result from its call
        previous_at = next((i for i in range(stop - 1, head - 1, -1)
                            if _is_block(messages[i])), None)
        start = previous_at if previous_at is not None else head
        previous = messages[previous_at] if previous_at is not None else None
        why = ("over the message trigger" if over_count
               else f"over the token trigger ({tokens} > {options.trigger_tokens} tokens)"
               if over_tokens else f"over the budget ({tokens} > {budget} tokens)")
        lifted = lift(messages, self._caches.actions)
        plan = HistoryPlan(transcript, tokens, why, task, start, stop, previous,
                           lifted=lifted, budget_tokens=budget)
        if budget is not None:
            plan = self._fit(plan, budget, summary_tokens)
        if not any(m.role in ("assistant", "tool") for m in messages[start : plan.stop]):
            return HistoryPlan(transcript, tokens, "nothing older than the last "
                               f"{options.keep_last_n} messages to summarize", task)
        return replace(plan, prompt=self._prompt(plan))

    def _size(self, plan: HistoryPlan, summary: str | int) -> int:
        """The output's tokens with this cut: what stays, and the block with ``summary``
        (its text, or its size in tokens)."""
        messages = plan.transcript.messages
        gone = {id(m) for m in _replaced(plan)}
        kept = [m for m in messages if id(m) not in gone]
        header = HISTORY_HEADER.format(handle=self._handle(plan))
        if isinstance(summary, str):
            block = self._counter.message(Message("user", (Part("text", "\n".join(
                [header, summary.strip()])),)))
        else:
            block = self._counter.message(Message("user", (Part("text", header),))) + summary
        return self._counter.messages(kept) + block

    def _fit(self, plan: HistoryPlan, budget: int, summary_tokens: int | None) -> HistoryPlan:
        """The plan with the fewest of the last messages dropped that brings the output
        within ``budget``: the cut moves forward past whole calls with their results.
        Without ``summary_tokens`` the deterministic summary is measured at each cut it
        is worth measuring at (it grows as the span does, so a cut that fits the last
        measure is measured again)."""
        messages = plan.transcript.messages
        cuts = [s for s in range(plan.stop, len(messages) + 1)
                if s == len(messages) or messages[s].role != "tool"]
        estimate: str | int = summary_tokens if summary_tokens is not None else ""
        measured_at = -1
        for stop in cuts:
            tried = replace(plan, stop=stop)
            if summary_tokens is None and measured_at < 0:
                estimate, measured_at = self.fast_summary(tried), stop
            if self._size(tried, estimate) > budget:
                continue
            if summary_tokens is not None or measured_at == stop:
                return self._fitted(tried, plan.stop)
            estimate, measured_at = self.fast_summary(tried), stop
            if self._size(tried, estimate) <= budget:
                return self._fitted(tried, plan.stop)
        if summary_tokens is not None:
            # No room for the longest reply: the room the deterministic summary needs
            # will do, and the LLM's summary is cut to what is left (``_within_budget``).
            return self._fit(plan, budget, None)
        everything = replace(plan, stop=len(messages))
        least = self._size(everything, self.fast_summary(everything))
        raise BudgetTooSmall(
            f"the system prompt, the task, the user's messages and the summary of the "
            f"rest alone take {least} tokens, past 'budget_tokens' {budget}; send a "
            f"budget of at least {least} tokens.", pointer="/budget_tokens")

    def _fitted(self, plan: HistoryPlan, wanted: int) -> HistoryPlan:
        if plan.stop == wanted:
            return plan
        kept = len(plan.transcript.messages) - plan.stop
        return replace(plan, reason=f"{plan.reason}; the last {kept} messages kept, not "
                       f"{len(plan.transcript.messages) - wanted}, to fit the budget of "
                       f"{plan.budget_tokens} tokens")

    def _prompt(self, plan: HistoryPlan) -> tuple[PromptMessage, ...]:
        text, _ = render_evidence(plan.span, self._context(plan.transcript.messages),
                                  PROMPT_CHARS)
        rendered = fence(text)
        if plan.previous is not None:
            user = HISTORY_UPDATE.format(summary=fence(_body(plan.previous)),
                                         transcript=rendered)
        else:
            user = HISTORY_FIRST.format(task=fence(shorten(plan.task, 4_000), "task"),
                                        transcript=rendered)
        return (PromptMessage("system", HISTORY_SYSTEM), PromptMessage("user", user))

    def fast_summary(self, plan: HistoryPlan) -> str:
        """Sections by deterministic extraction, merged into the previous block's."""
        context = self._context(plan.transcript.messages)
        span = plan.span
        sections = _sections(_body(plan.previous)) if plan.previous is not None else {}
        pairs = call_results(span)
        ledger = build_ledger(pairs, context.calls, context.outcomes)
        errors, said = [], []
        # The work as the prior-work notes of /synthesize tell it, one entry per line of
        # theirs: each call with what it wrote and what came of it (the failure line, or
        # the first and the salient lines of its result), the agent's own statements.
        work = [_entry(part.text) for g in groups(span) if isinstance(g, list)
                for part in self._runs.summary(g, context).lines]
        for call, result in pairs:
            if result is not None and context.outcomes.of(result).error:
                errors.append(f"- {call.name}: {context.outcomes.of(result).line}")
        for m in span:
            if m.role == "assistant":
                if m.text.strip():
                    said.append(shorten(" ".join(m.text[:600].split()), 300))
            elif m.role == "user":
                found = [shorten(s.strip(), 200) for s in re.split(r"(?<=[.!?])\s+", m.text)
                         if _CONSTRAINT.search(s)]
                sections.setdefault("Decisions and constraints", []).extend(
                    f"- {s}" for s in found)
        sections.setdefault("Original request", [shorten(plan.task, 600)])
        if ledger:
            state = [line for line in render_ledger(ledger).splitlines()[1:]]
            sections["Project / world state"] = _merge(
                sections.get("Project / world state", []), state, _MAX_SHORT)
        sections["Completed work"] = _condense(sections.get("Completed work", []), work,
                                               _MAX_LINES, self._handle(plan))
        sections["Decisions and constraints"] = _merge(
            [], sections.get("Decisions and constraints", []), _MAX_SHORT)
        sections["Errors"] = _merge(sections.get("Errors", []), errors, _MAX_ERRORS)
        if said or work:
            sections["Current state"] = [said[-1] if said else f"last action: {work[-1][2:]}"]
        return "\n".join(f"## {name}\n" + ("\n".join(sections.get(name, [])) or "(none)")
                         for name in HISTORY_SECTIONS)

    def _handle(self, plan: HistoryPlan) -> str:
        """The handle the summary's block will carry: what /expand gives back for it."""
        return self._caches.handles.of(_replaced(plan))

    def _within_budget(self, plan: HistoryPlan, summary: str) -> str:
        """An LLM's summary cut to the room the budget leaves it (a reply is counted by
        this service's tokenizer, not the provider's)."""
        budget = plan.budget_tokens
        for _ in range(_CUT_ROUNDS):
            if budget is None:
                break
            over = self._size(plan, summary) - budget
            if over <= 0:
                break
            tokens = max(self._counter.text(summary), 1)
            summary = shorten(summary, max(len(summary) * (tokens - over) // tokens - 8, 0))
        return summary

    def finish(self, plan: HistoryPlan, summary: str) -> HistoryResult:
        summary = self._within_budget(plan, summary)
        messages = plan.transcript.messages
        region = messages[plan.start : plan.stop]
        replaced = _replaced(plan)
        span = span_of("summarized", replaced, self._caches.handles)
        # One text part: merged into a neighbouring user message by a format that has
        # no two user messages in a row, it is still one piece the next call finds.
        text = "\n".join([HISTORY_HEADER.format(handle=span.handle), summary.strip()])
        block = Message("user", (Part("text", text),))
        gone = {id(m) for m in replaced}
        kept = [m for m in region if id(m) not in gone]
        # The block goes after the region's user messages: put before them, it would
        # show work the user asked for later as done before they asked.
        out = [*messages[: plan.start], *kept, block, *messages[plan.stop :]]
        exempt = frozenset({id(plan.previous)}) if plan.previous is not None else frozenset()
        check_output("compress-history", messages, out, exempt | plan.foldable)
        books = account(self._counter, self._caches.facts, messages, plan.tokens_before, out,
                        replaced)
        incremental = plan.previous is not None
        if not books.shrunk:
            return HistoryResult(plan.transcript, False, "the summary would not be smaller "
                                 "than the messages it replaces", incremental,
                                 books.tokens_before, books.tokens_before)
        t = plan.transcript
        return HistoryResult(Transcript(tuple(out), t.format, t.envelope), True, plan.reason,
                             incremental, books.tokens_before, books.tokens_after, (span,),
                             books.lost)

    def unchanged(self, plan: HistoryPlan) -> HistoryResult:
        return HistoryResult(plan.transcript, False, plan.reason, False, plan.tokens_before,
                             plan.tokens_before)


def _replaced(plan: HistoryPlan) -> list[Message]:
    """The messages the new block replaces: the region's work, and the previous block."""
    foldable = plan.foldable
    return [m for m in plan.transcript.messages[plan.start : plan.stop]
            if m.role in ("assistant", "tool") or m is plan.previous or id(m) in foldable]


def _weight(entry: str) -> int:
    """How long an entry of "Completed work" stays when the section is full: the agent's
    words, failures and changes longest (2), reads shortest (0)."""
    first = entry.split("\n", 1)[0]
    if first.startswith("- you said:") or "-> failed:" in first or _CHANGE.search(first):
        return 2
    return 0 if _READ.match(first) else 1


def _condense(old: list[str], new: list[str], most: int, handle: str) -> list[str]:
    """Old entries then new ones, without repeats; past ``most``, the lightest go first
    (reads, then other calls, then the agent's words, failures and changes), oldest
    first within a weight, and one line says how many went, of what, and where they are."""
    earlier = [line for line in old if not line.startswith("(+")]
    gone_before = sum(int(m.group(1)) for line in old if (m := _LEFT_OUT.match(line)))
    merged = list(dict.fromkeys([*earlier, *new]))
    if len(merged) <= most:
        return merged if not gone_before else [_left_out(gone_before, {}, handle), *merged]
    order = sorted(range(len(merged)), key=lambda n: (_weight(merged[n]), n))
    dropped = set(order[: len(merged) - most])
    kinds = {weight: sum(1 for n in dropped if _weight(merged[n]) == weight)
             for weight in (0, 1, 2)}
    kept = [line for n, line in enumerate(merged) if n not in dropped]
    return [_left_out(gone_before + len(dropped), kinds, handle), *kept]


def _left_out(count: int, kinds: dict[int, int], handle: str) -> str:
    names = ((0, "reads"), (1, "other calls"), (2, "statements, failures or changes"))
    said = ", ".join(f"{kinds[w]} {name}" for w, name in names if kinds.get(w))
    return (f"(+{count} older entries left out" + (f", this time {said}" if said else "")
            + f"; GET /expand/{handle} gives back the messages)")


def _entry(line: str) -> str:
    """A note's line as an entry of "Completed work": its first line and, in order, as
    many of the lines under it (code, result lines) as fit _UNDER_CHARS. The summary
    keeps many entries; at a note's length each, it would cost more than it saves."""
    first, _, rest = line.partition("\n")
    if not rest:
        return line
    kept = [first]
    used = 0
    for under in rest.split("\n"):
        used += len(under)
        if used > _UNDER_CHARS:
            if len(kept) == 1:
                # A result whose first row is long (a JSON table's): part of it, not an
                # entry that ends in "->" with nothing after it.
                kept.append(shorten(under, _UNDER_CHARS))
            break
        kept.append(under)
    return "\n".join(kept)


def _is_block(m: Message) -> bool:
    return m.role == "user" and m.text.startswith(HISTORY_MARKER)


def _block_part(m: Message) -> int | None:
    """Where a summary block sits among a user message's parts, if it does."""
    if m.role != "user" or len(m.parts) < 2:
        return None
    return next((i for i, p in enumerate(m.parts)
                 if p.kind == "text" and p.text.startswith(HISTORY_MARKER)), None)


def _unmerged(transcript: Transcript) -> Transcript:
    """Anthropic and Gemini have no two user messages in a row: the block an earlier
    call wrote comes back merged into the user message beside it. Read apart again,
    it is a message of its own that the next call finds and updates, as in OpenAI's
    format (where an unfound block meant a second one on every call)."""
    messages = transcript.messages
    if not any(_block_part(m) is not None for m in messages):
        return transcript
    out: list[Message] = []
    for m in messages:
        at = _block_part(m)
        if at is None:
            out.append(m)
            continue
        # Written from their parts: the wire message they came from is no longer theirs.
        out += [Message("user", piece) for piece in (m.parts[:at], m.parts[at : at + 1],
                                                     m.parts[at + 1 :]) if piece]
    return Transcript(tuple(out), transcript.format, transcript.envelope)


def _body(block: Message) -> str:
    """A summary block without its header line."""
    return block.text.split("\n", 1)[1] if "\n" in block.text else ""


def _sections(text: str) -> dict[str, list[str]]:
    """A summary's entries by section; an indented line belongs to the entry above it
    (a result's salient lines, a JSON answer's rows)."""
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("## "):
            current = found.setdefault(line[3:].strip(), [])
        elif current is not None and line.startswith(" ") and current:
            current[-1] += "\n" + line
        elif current is not None and line.strip() and line.strip() != "(none)":
            current.append(line)
    return found


def _merge(old: list[str], new: list[str], most: int) -> list[str]:
    """Old lines then new ones, without repeats, keeping the newest ``most``."""
    earlier = [line for line in old if not line.startswith("(+")]
    merged = list(dict.fromkeys([*earlier, *new]))
    if len(merged) <= most:
        return merged
    return [f"(+{len(merged) - most} earlier)", *merged[-most:]]
