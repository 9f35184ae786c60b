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
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial

from app.engine.compaction import Handles, Hasher, StrategyContext
from app.engine.gist import gist
from app.engine.ledger import Ledger, copied, extend_ledger
from app.engine.memo import Memo
from app.engine.outcomes import shorten
from app.engine.salient import json_lines, text_lines
from app.engine.transcript import Message, Part, ToolCall, call_results

_RESULT_CHARS = 100
_SAID_CHARS = 130
_REPEAT_START = "  [same again, "
_REPEAT = _REPEAT_START + "{n} times in a row]"
# Beside a result's first line, its lines that carry facts, up to this many characters;
# a JSON answer is shown as its objects' fields instead, up to _JSON_CHARS.
_SALIENT_CHARS = 100
_JSON_CHARS = 320
# How far back from a run's end a call looks for a summary an earlier call made.
_PROBE = 16

# What a message contributes to a summary; equal identities mean equal summaries.
_Identity = tuple[object, ...]
# A call's name and arguments, its result's text and error flag.
_LineKey = tuple[str, str, str | None, bool]


# Made per call, result or span: __init__ is written out so that mypyc compiles it (see
# transcript.Message). Treated as a value.
@dataclass(init=False)
class RunSummary:
    # State after the run, copied before it is fed more.
    hasher: Hasher = field(compare=False, repr=False)
    handle: str
    calls: int
    replies: int
    lines: tuple[Part, ...]  # shared by every note made from the run
    # Per line: the shorter form an aged line takes (None: the line is left out of an
    # aged part), and the transcript index of the message it came from.
    brief: tuple[Part | None, ...]
    origins: tuple[int, ...]
    line_chars: int
    chars: int  # text and arguments of the run
    tools: tuple[str, ...]
    ledger: Ledger  # not changed once made: extended as a copy

    def __init__(self, hasher: Hasher, handle: str, calls: int, replies: int,
                 lines: tuple[Part, ...], brief: tuple[Part | None, ...],
                 origins: tuple[int, ...], line_chars: int, chars: int,
                 tools: tuple[str, ...], ledger: Ledger) -> None:
        self.hasher = hasher
        self.handle = handle
        self.calls = calls
        self.replies = replies
        self.lines = lines
        self.brief = brief
        self.origins = origins
        self.line_chars = line_chars
        self.chars = chars
        self.tools = tools
        self.ledger = ledger


def _identity(m: Message) -> _Identity:
    # Built for every older message on every call, so the common shapes go first.
    parts = m.parts
    texts = parts[0].text if len(parts) == 1 else tuple([p.text for p in parts])
    if not m.tool_calls:
        return (m.role, texts, m.tool_call_id, m.is_error)
    return (m.role, texts, tuple([(c.id, c.name, c.arguments) for c in m.tool_calls]))


def _weigh_line(key: _LineKey) -> int:
    return len(key[0]) + len(key[1]) + len(key[2] or "")


class Runs:
    def __init__(self, *, cache_chars: int = 32_000_000) -> None:
        # A key holds the run's texts, so the bound counts their characters.
        self._runs: dict[tuple[_Identity, ...], RunSummary] = {}
        # How many cached runs start with each message: a run nobody began before (any
        # cold call) is not probed for at all.
        self._starts: dict[_Identity, int] = {}
        self._chars = 0
        self._max_chars = cache_chars
        self._lock = threading.Lock()
        # Lines by call and result: a run seen in another transcript, or cut at another
        # place, still has most of its lines made before.
        self._lines: Memo[_LineKey, tuple[str, str | None]] = Memo(cache_chars, _weigh_line)

    def summary(self, run: Sequence[Message], context: StrategyContext) -> RunSummary:
        """The summary of ``run`` (at least one message)."""
        ids = tuple(map(_identity, run))
        base: RunSummary | None = None
        covered = 0  # messages the cached summary found covers
        probes = len(ids) if ids[0] in self._starts else 0
        for n in range(probes, max(probes - _PROBE, 0), -1):
            base = self._runs.get(ids[:n])
            if base is not None:
                covered = n
                break
        if base is not None and covered == len(ids):
            return base
        new = run[covered:]
        if base is not None and new[0].role == "tool":
            base, new = None, run  # the base ends inside a step: read the run whole
        summary = self._extend(base, new, context)
        with self._lock:
            # The run that was extended is only a prefix of this one now: one entry per
            # run in progress, not one per step.
            if covered:
                self._forget(ids[:covered])
            if ids not in self._runs:
                self._runs[ids] = summary
                self._starts[ids[0]] = self._starts.get(ids[0], 0) + 1
                self._chars += summary.chars
            while self._chars > self._max_chars and self._runs:
                self._forget(next(iter(self._runs)))
        return summary

    def _forget(self, key: tuple[_Identity, ...]) -> None:
        gone = self._runs.pop(key, None)
        if gone is None:
            return
        self._chars -= gone.chars
        left = self._starts.pop(key[0], 1) - 1
        if left:
            self._starts[key[0]] = left

    def _extend(self, base: RunSummary | None, new: Sequence[Message],
                context: StrategyContext) -> RunSummary:
        handles: Handles = context.handles
        if base is None:
            hasher = handles.start()
            calls = replies = chars = 0
            lines: list[Part] = []
            brief: list[Part | None] = []
            origins: list[int] = []
            line_chars = 0
            tools: dict[str, None] = {}
            ledger = Ledger()
        else:
            hasher = base.hasher.copy()
            calls, replies, chars = base.calls, base.replies, base.chars
            lines = list(base.lines)
            brief = list(base.brief)
            origins = list(base.origins)
            line_chars = base.line_chars
            tools = dict.fromkeys(base.tools)
            ledger = copied(base.ledger)
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
                line = f"- said: {said}"
                lines.append(Part("text", line))
                brief.append(lines[-1])  # an aged part keeps what the agent said
                origins.append(m.index)
                line_chars += len(line)
            for call, result in itertools.islice(answers, len(m.tool_calls)):
                calls += 1
                chars += len(call.name) + len(call.arguments)
                tools[call.name] = None
                key = (call.name, call.arguments, result.text if result else None,
                       result is not None and result.is_error)
                line, short = self._lines.get(key, partial(_call_lines, call, result, context))
                before = len(lines)
                line_chars += _add_line(lines, line)
                if len(lines) > before:
                    brief.append(None if short is None else Part("text", short))
                    origins.append(m.index)
                elif short is not None:  # folded into a repeat, which an aged part keeps
                    brief[-1] = lines[-1]
        extend_ledger(ledger, pairs, context.calls, context.outcomes)
        return RunSummary(hasher, handles.name(hasher), calls, replies, tuple(lines),
                          tuple(brief), tuple(origins), line_chars, chars, tuple(tools), ledger)


def _add_line(lines: list[Part], line: str) -> int:
    """Append a call's line, or fold it into the line before when it is the same call
    with the same outcome (an agent rerunning a failing test); the change in length."""
    if lines:
        last = lines[-1].text
        if last == line:
            lines[-1] = Part("text", f"{line}{_REPEAT.format(n=2)}")
            return len(_REPEAT.format(n=2))
        if last.startswith(line) and last[len(line):].startswith(_REPEAT_START):
            n = int(last[len(line) + len(_REPEAT_START):].split(" ", 1)[0]) + 1
            lines[-1] = Part("text", f"{line}{_REPEAT.format(n=n)}")
            return len(lines[-1].text) - len(last)
    lines.append(Part("text", line))
    return len(line)


def _call_lines(call: ToolCall, result: Message | None, context: StrategyContext,
                _key: _LineKey) -> tuple[str, str | None]:
    """A call's line, and its aged form: a failure or a write keeps its line (without
    the result's lines, for a write); a call that only read or ran is left out (None)."""
    summary = context.calls.of(call)
    head = f"- {summary.head}"
    if summary.wrote:  # what the agent wrote matters more than what it read
        head += f" {summary.wrote}"
    aged = head if summary.writes or summary.defines else None
    if result is None:
        return head, aged
    outcome = context.outcomes.of(result)
    if outcome.error:  # the error line is already as short as it may get
        line = f"{head} -> failed: {outcome.line}"
        return line, line
    data = json_lines(result.text, _JSON_CHARS)
    if data is not None:  # an API's answer: its objects' fields say more than its start
        return ("\n".join([f"{head} ->", *(f"    {line}" for line in data)]) if data
                else f"{head} -> {shorten(outcome.line, _RESULT_CHARS)}"), aged
    first = shorten(outcome.line, _RESULT_CHARS) if outcome.line else "(no output)"
    more = text_lines(result.text, _SALIENT_CHARS, outcome.line) \
        if len(result.text) > len(first) + 2 else []
    return "\n".join([f"{head} -> {first}", *(f"    {line}" for line in more)]), aged
