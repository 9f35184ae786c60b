"""Runs of older work, and what a prior-work note needs of each: its handle, its
lines, its share of the artifact ledger.

An agent resends its transcript with a step more every time, so the newest
older run is usually the run of the previous call plus a step. Summaries are
remembered under the run's content; a call looks for the summary of its run
without the last few messages and extends it with just those, instead of
reading the whole run again.
"""

from __future__ import annotations

import itertools
import re
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Final

from app.engine.compaction.base import Handles, Hasher, StrategyContext
from app.engine.compaction.ledger import Ledger, copied, extend_ledger
from app.engine.footprint import POINTER, TUPLE_HEADER, footprint
from app.engine.memo import CacheUsage, Memo, combined
from app.engine.reading.answers import JSON_CHARS, json_lines, json_value
from app.engine.reading.calls import CallSummary, markup_head
from app.engine.reading.gist import gist
from app.engine.reading.outcomes import Outcome, shorten
from app.engine.reading.salient import Ranked, chosen_lines, ranked_lines, short_lines, text_lines
from app.engine.reading.textactions import MARKUP_CALL, fenced_code
from app.engine.reading.verbs import changes_state
from app.engine.transcript.model import Message, Part, ToolCall, call_results
from app.engine.transcript.sizes import size_of

_RESULT_CHARS = 100
_SAID_CHARS = 130
_REPEAT_START = "  [same again, "
_REPEAT = _REPEAT_START + "{n} times in a row]"
# Beside a result's first line, its lines that carry facts, up to this many characters
# by what the call did; a JSON answer is shown as its objects' fields instead, up to
# JSON_CHARS. A read's result (a file's code, a search's matches) and the code a call
# carries (a script, a heredoc, a written file) get the most: chosen with the eval,
# where these lines held more of what agents went on to use per token than any other
# part of a note. The agent's own code most of all: 1,600 characters, close to all of
# the head and tail a script is ranked from (see salient), gave every tier 0.2 to 0.5
# points of recall over 1,000 for 0.03 to 0.07 of reduction. Of the other results, a
# test run's lines (its summary, the odd lines of its output) are worth more than those
# of the rest (a script's prints, a listing): moving 50 characters of those to reads
# gave every tier 0.1 to 0.25 points of recall at the same reduction.
_READ_CHARS = 1300
_CODE_CHARS = 1600
_TEST_CHARS = 100
_SALIENT_CHARS = 50
# An aged read keeps its ``key: value`` lines among this much of its most salient ones.
_AGED_VALUE_CHARS = 60
_VALUE_LINE = re.compile(r"[\w .-]{1,40}: \S")
# How far back from a run's end a call looks for a summary an earlier call made.
_PROBE = 16

# What a message contributes to a summary; equal identities mean equal summaries.
_Identity = tuple[object, ...]
_RunKey = tuple[int, ...]  # each message's identity's fingerprint
# A call's name and arguments, its result's text and error flag.
_LineKey = tuple[str, str, str | None, bool]
# The last call (its key's fingerprint: the key holds the call's result), its line as the
# note shows it (lines shown before left out), and how many times in a row the call came
# with that outcome.
_Last = tuple[int, str, int]


# Made per call, result or span: __init__ is written out so that mypyc compiles it (see
# transcript.Message). Treated as a value.
@dataclass(init=False)
class RunSummary:
    # State after the run, copied before it is fed more.
    hasher: Hasher = field(compare=False, repr=False)
    handle: str
    calls: int
    replies: int
    # Shared by every note made from the run; empty unless ``whole``.
    lines: tuple[Part, ...]
    # Per line: the shorter form an aged line takes (None: the line is left out of an
    # aged part), and the transcript index of the message it came from.
    brief: tuple[Part | None, ...]
    origins: tuple[int, ...]
    chars: int  # text and arguments of the run
    tools: tuple[str, ...]
    ledger: Ledger  # not changed once made: extended as a copy
    shown: frozenset[str]  # the lines under calls' own lines that the note shows
    last: _Last | None  # the last line, when it is a call's
    # False: only the aged form was made (``brief``), for a run that a note shows aged
    # from the start; the lines a whole note shows are the costly part of a summary.
    whole: bool

    def __init__(self, hasher: Hasher, handle: str, calls: int, replies: int,
                 lines: tuple[Part, ...], brief: tuple[Part | None, ...],
                 origins: tuple[int, ...], chars: int,
                 tools: tuple[str, ...], ledger: Ledger, shown: frozenset[str],
                 last: _Last | None, whole: bool = True) -> None:
        self.hasher = hasher
        self.handle = handle
        self.calls = calls
        self.replies = replies
        self.lines = lines
        self.brief = brief
        self.origins = origins
        self.chars = chars
        self.tools = tools
        self.ledger = ledger
        self.shown = shown
        self.last = last
        self.whole = whole


def _identity(m: Message) -> _Identity:
    # Built for every older message on every call, so the common shapes go first.
    parts = m.parts
    texts = parts[0].text if len(parts) == 1 else tuple([p.text for p in parts])
    if not m.tool_calls:
        return (m.role, texts, m.tool_call_id, m.is_error)
    return (m.role, texts, tuple([(c.id, c.name, c.arguments) for c in m.tool_calls]))


def _grown(base: RunSummary | None, base_grown: int, summary: RunSummary) -> tuple[int, int]:
    """The bytes a run's entry holds: what grows with the run (the summary's lines, their
    aged forms and origins), from what the entry it extends had and what was added, and
    in all, with what is made anew at each step and measured whole (the ledger and the
    shown lines, which hold the run's distinct files, commands and lines, the tuples, and
    the entry's fingerprints). Measuring the whole run on every step would cost a warm
    call its savings."""
    lines = len(base.lines) if base is not None else 0
    brief = len(base.brief) if base is not None else 0
    origins = len(base.origins) if base is not None else 0
    grown = base_grown + _items(size_of, summary.lines[lines:]) + \
        _items(size_of, summary.brief[brief:]) + _items(footprint, summary.origins[origins:])
    whole = sys.getsizeof(summary.lines) + sys.getsizeof(summary.brief) + \
        sys.getsizeof(summary.origins) + footprint(summary.ledger) + \
        footprint(summary.shown) + _SUMMARY_BYTES + _ENTRY_BYTES
    return grown, grown + whole


def _items(size: Callable[[object], int], items: tuple[object, ...]) -> int:
    """The bytes of a tuple's items, without the tuple's own."""
    return size(items) - TUPLE_HEADER - POINTER * len(items)


def _prefix(marks: tuple[int, ...], n: int) -> int:
    """The fingerprint of a run's first ``n`` messages, from each one's (``marks``)."""
    return hash(marks[:n])


# An entry's fingerprint, its place in the tables of runs, sizes and starts, and its
# sizes' tuple.
_ENTRY_BYTES: Final = 3 * (POINTER * 3 + 36) + TUPLE_HEADER + 2 * (POINTER + 36)
# A summary's own object and its few small fields (handle, counts, tool names).
_SUMMARY_BYTES: Final = 256


class Runs:
    """``cache_bytes``: what its summaries and memos hold together (see ``footprint``)."""

    def __init__(self, *, cache_bytes: int = 64 << 20, reply_code: bool = True) -> None:
        # Whether a reply's line shows the code it wrote (see ``_with_code``).
        self._reply_code = reply_code
        # Under the fingerprint of the run's messages (see ``_prefix``), not the messages'
        # texts: keeping those held each agent's older turns once more (170 KB an agent
        # of bench --load --agents --from-step 30's 138 KB bodies, two thirds of an
        # entry), where a later call only looks its run up. Fingerprints as ``memo``
        # keeps them: 64-bit hashes keyed by the process's secret.
        self._runs: dict[int, RunSummary] = {}
        # Per entry: the bytes that grow with its run, its bytes in all, and the
        # fingerprint of its first message (its count in ``_starts``).
        self._sizes: dict[int, tuple[int, int, int]] = {}
        # How many cached runs start with each message: a run nobody began before (any
        # cold call) is not probed for at all.
        self._starts: dict[int, int] = {}
        self._bytes = 0
        self._max_bytes = cache_bytes // 2
        self._lock = threading.Lock()
        # Lines by call and result: a run seen in another transcript, or cut at another
        # place, still has most of its lines made before.
        self._lines: Memo[_LineKey, tuple[str, str | None]] = Memo(
            cache_bytes // 4, fingerprinted=True)
        # Runs a note shows aged from the start, summarized in their aged form only, and
        # those forms by call and result.
        self._aged: Memo[_RunKey, RunSummary] = Memo(cache_bytes // 8, fingerprinted=True)
        self._aged_lines: Memo[_LineKey, str | None] = Memo(cache_bytes // 8, fingerprinted=True)
        self._usage = CacheUsage()

    @property
    def usage(self) -> CacheUsage:
        """Runs found whole or extended from a prefix (hits) or read anew (misses), runs
        let go, and the bytes of summaries and memos held."""
        u = self._usage
        u.held = self._bytes
        u.entries = len(self._runs)
        lines = combined(u, self._lines.usage, self._aged.usage, self._aged_lines.usage)
        lines.hits, lines.misses, lines.evicted = u.hits, u.misses, u.evicted
        return lines

    def summary(self, run: Sequence[Message], context: StrategyContext, *,
                aged: bool = False) -> RunSummary:
        """The summary of ``run`` (at least one message). ``aged``: every line of it is
        shown in its aged form, so the lines of a whole note need not be made (a cold
        call notes most of a long transcript so); a whole summary made before serves
        too, and gives the same aged form."""
        marks = tuple([hash(i) for i in map(_identity, run)])
        if aged:
            made = self._runs.get(_prefix(marks, len(marks)))
            if made is not None:
                return made
            return self._aged.get(marks, partial(self._aged_summary, run, context))
        base: RunSummary | None = None
        covered = 0  # messages the cached summary found covers
        probes = len(marks) if marks[0] in self._starts else 0
        for n in range(probes, max(probes - _PROBE, 0), -1):
            base = self._runs.get(_prefix(marks, n))
            if base is not None:
                covered = n
                break
        if base is not None:
            self._usage.hits += 1
        else:
            self._usage.misses += 1
        if base is not None and covered == len(marks):
            return base
        new = run[covered:]
        if base is not None and new[0].role == "tool":
            base, new = None, run  # the base ends inside a step: read the run whole
        summary = self._extend(base, new, context)
        extended = _prefix(marks, covered)
        base_grown = self._sizes.get(extended, (0, 0, 0))[0] if base is not None else 0
        grown, size = _grown(base, base_grown, summary)
        kept = _prefix(marks, len(marks))
        with self._lock:
            # The run that was extended is only a prefix of this one now: one entry per
            # run in progress, not one per step.
            if covered:
                self._forget(extended)
            if kept not in self._runs:
                self._runs[kept] = summary
                self._sizes[kept] = (grown, size, marks[0])
                self._starts[marks[0]] = self._starts.get(marks[0], 0) + 1
                self._bytes += size
            # The newest stays: its run calls again next.
            while self._bytes > self._max_bytes and len(self._runs) > 1:
                self._forget(next(iter(self._runs)))
                self._usage.evicted += 1
        return summary

    def _aged_summary(self, run: Sequence[Message], context: StrategyContext,
                      _key: _RunKey) -> RunSummary:
        return self._extend(None, run, context, whole=False)

    def _forget(self, key: int) -> None:
        gone = self._runs.pop(key, None)
        if gone is None:
            return
        _, size, start = self._sizes.pop(key, (0, 0, 0))
        self._bytes -= size
        left = self._starts.pop(start, 1) - 1
        if left:
            self._starts[start] = left

    def _extend(self, base: RunSummary | None, new: Sequence[Message],
                context: StrategyContext, *, whole: bool = True) -> RunSummary:
        handles: Handles = context.handles
        if base is None:
            hasher = handles.start()
            calls = replies = chars = 0
            lines: list[Part] = []
            brief: list[Part | None] = []
            origins: list[int] = []
            tools: dict[str, None] = {}
            ledger = Ledger()
            shown: set[str] = set()
            last: _Last | None = None
        else:
            hasher = base.hasher.copy()
            calls, replies, chars = base.calls, base.replies, base.chars
            lines = list(base.lines)
            brief = list(base.brief)
            origins = list(base.origins)
            tools = dict.fromkeys(base.tools)
            ledger = copied(base.ledger)
            shown = set(base.shown)
            last = base.last
        handles.feed(hasher, new)
        pairs = call_results(new)
        answers = iter(pairs)
        for m in new:
            chars += sum(len(p.text) for p in m.parts)
            if m.role != "assistant":
                continue
            if not m.tool_calls:
                replies += 1
            # The agent's own words, beside the calls they explain: its causes, plans and
            # decisions are the state it goes on to act on.
            said = gist(m.text, _SAID_CHARS) if m.text.strip() else ""
            if not said and not m.tool_calls and m.text.strip():  # a reply to the user
                said = shorten(" ".join(m.text[: _SAID_CHARS * 2].split()), _SAID_CHARS)
            if said:
                # "you": the note sits in a user message, and what the agent said must not
                # read as the user's words (the user's own messages stay where they were).
                part = Part("text", f"- you said: {said}")
                if whole:
                    lines.append(_with_code(part, m) if self._reply_code and not m.tool_calls
                                 else part)
                brief.append(part)  # an aged part keeps what the agent said
                origins.append(m.index)
                last = None
            for call, result in itertools.islice(answers, len(m.tool_calls)):
                calls += 1
                chars += len(call.name) + len(call.arguments)
                tools[call.name] = None
                # A call written as markup shows as markup: not the line of a call made
                # on the wire with the same name and arguments.
                named = f"<{call.name}>" if call.id.startswith(MARKUP_CALL) else call.name
                key = (named, call.arguments, result.text if result else None,
                       result is not None and result.is_error)
                if whole:
                    line, short = self._lines.get(
                        key, partial(_call_lines, call, result, context))
                else:
                    line, short = "", self._aged_lines.get(
                        key, partial(_aged_line, call, result, context))
                mark = hash(key)
                if last is not None and last[0] == mark:
                    # The same call with the same outcome (an agent rerunning a failing
                    # test): one line with a count, which an aged part keeps too.
                    count = last[2] + 1
                    if whole:
                        lines[-1] = Part("text", f"{last[1]}{_REPEAT.format(n=count)}")
                    if short is not None:
                        brief[-1] = Part("text", f"{short}{_REPEAT.format(n=count)}")
                    last = (mark, last[1], count)
                    continue
                text = _new_lines(line, shown) if whole else ""
                if whole:
                    lines.append(Part("text", text))
                brief.append(None if short is None else Part("text", short))
                origins.append(m.index)
                last = (mark, text, 1)
        extend_ledger(ledger, pairs, context.calls, context.outcomes)
        return RunSummary(hasher, handles.name(hasher), calls, replies, tuple(lines),
                          tuple(brief), tuple(origins), chars, tuple(tools), ledger,
                          frozenset(shown), last, whole)


def _with_code(said: Part, reply: Message) -> Part:
    """A reply's note line with the lines worth most of the code it wrote in fences: an
    agent that answers in prose (a chat assistant, Aider explaining a change) writes its
    code there, and that code is its own work, as a script a call carries is."""
    code = fenced_code(reply.text)
    if not code:
        return said
    shown = text_lines(code, _CODE_CHARS, per_shape=0)
    return Part("text", "\n".join([said.text, *(f"    | {line}" for line in shown)]))


# A note line of a command that starts in a directory: "- bash: cd /testbed && ls".
_CD_HEAD = re.compile(r"(- [\w.-]+: )cd (\S+) && ")


def _new_lines(line: str, shown: set[str]) -> str:
    """A call's line without the lines under it that the note shows already (a script
    rewritten with a change, a file region read again); those it shows are added. A
    command's ``cd DIR &&`` is shown where the directory changes, not on every line."""
    head, *under = line.split("\n")
    cd = _CD_HEAD.match(head)
    if cd is not None:
        where = "\0" + cd.group(2)  # no line of text holds a NUL: a key of its own
        if where in shown:
            head = cd.group(1) + head[cd.end():]
        else:  # another directory: forget the one before (a scan, as rare as a cd)
            shown.difference_update([k for k in shown if k.startswith("\0")])
            shown.add(where)
    new = [u for u in under if u not in shown]
    shown.update(new)
    if len(new) == len(under) and cd is None:
        return line
    return "\n".join([head, *new])


def _call_lines(call: ToolCall, result: Message | None, context: StrategyContext,
                _key: _LineKey) -> tuple[str, str | None]:
    """A call's line, with the lines of the code it carries and of its result worth most,
    and its aged form (see ``_aged_line``)."""
    summary, head = _head(call, context)
    # The agent's own code is what it goes on to reuse (names, calls, paths): in the
    # eval, a third of the facts notes missed were last seen in a script it had written.
    code = [f"    | {line}" for line in text_lines(summary.code, _CODE_CHARS, per_shape=0)] \
        if summary.code else []
    aged = head if _kept(summary, call) else None
    if result is None:
        return "\n".join([head, *code]), aged
    outcome = context.outcomes.of(result)
    if outcome.error:  # the error line is already as short as it may get
        line = _failed(head, outcome)
        return "\n".join([line, *code]), line
    data = json_lines(result.text, JSON_CHARS)
    if data is not None:  # an API's answer: its objects' fields say more than its start
        if not data:
            return "\n".join([f"{head} -> {shorten(outcome.line, _RESULT_CHARS)}", *code]), aged
        return "\n".join([f"{head} ->", *code, *(f"    {line}" for line in data)]), aged
    first = _first(outcome)
    # What a read showed (code, a listing) is what the agent works from next.
    budget = _READ_CHARS if summary.reads else \
        _TEST_CHARS if summary.runs_tests else _SALIENT_CHARS
    ranked = _ranked(result, outcome, first)
    more = chosen_lines(ranked, budget)
    if aged is None:
        aged = _values(head, ranked)
    return "\n".join([f"{head} -> {first}", *code, *(f"    {line}" for line in more)]), aged


def _aged_line(call: ToolCall, result: Message | None, context: StrategyContext,
               _key: _LineKey) -> str | None:
    """A call's aged form, the second of ``_call_lines`` made alone: a failure, a write
    or a change of state keeps its line (without code or result lines), a read keeps
    only the ``key: value`` lines it reported; a call that did neither is left out
    (None)."""
    summary, head = _head(call, context)
    kept = _kept(summary, call)
    if result is None:
        return head if kept else None
    outcome = context.outcomes.of(result)
    if outcome.error:
        return _failed(head, outcome)
    if kept:
        return head
    if json_value(result.text) is not None:
        return None
    if not any(_is_value(line) for line in short_lines(result.text, _AGED_VALUE_CHARS)):
        return None  # no line could be one: the ranking would find none
    return _values(head, _ranked(result, outcome, _first(outcome)))


def _failed(head: str, outcome: Outcome) -> str:
    """A failed call's line: its error line, and on a line of its own the exception its
    chain started from when the error line had no room for it (what was raised last
    often only wraps what to act on)."""
    line = f"{head} -> failed: {outcome.line}"
    cause = outcome.unnamed_cause
    return f"{line}\n    caused by: {cause}" if cause else line


def _head(call: ToolCall, context: StrategyContext) -> tuple[CallSummary, str]:
    summary = context.calls.of(call)
    shown = markup_head(call.name, call.arguments) if call.id.startswith(MARKUP_CALL) \
        else summary.head
    head = f"- {shown}"
    if summary.wrote:  # what the agent wrote matters more than what it read
        head += f" {summary.wrote}"
    return summary, head


def _kept(summary: CallSummary, call: ToolCall) -> bool:
    """Whether an aged note keeps the call's line: it wrote, defined or changed state."""
    return bool(summary.writes or summary.defines or changes_state(call.name))


def _is_value(line: str) -> bool:
    return _VALUE_LINE.match(line) is not None and "=" not in line


def _first(outcome: Outcome) -> str:
    return shorten(outcome.line, _RESULT_CHARS) if outcome.line else "(no output)"


def _ranked(result: Message, outcome: Outcome, first: str) -> Ranked:
    return ranked_lines(result.text, outcome.line) if len(result.text) > len(first) + 2 \
        else []


def _values(head: str, ranked: Ranked) -> str | None:
    """What an aged read keeps of what it reported (a setting, a count, an id): the
    "key: value" lines among its most salient ones, without the code it showed."""
    values = [line.strip() for line in chosen_lines(ranked, _AGED_VALUE_CHARS)
              if _is_value(line.strip())]
    return "\n".join([head, *(f"    {line}" for line in values)]) if values else None
