"""The ``fast`` strategy: older turns become compact prior-work notes, recent turns stay.

User and system messages in the older part are kept where they were (they
carry the constraints agents forget); each run of assistant and tool
messages between them becomes one note, unless the note would not be
shorter, and the last note ends with the artifact ledger. Notes are cached by
the run's content: an agent resends the same older runs on every step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

from app.engine.compaction import (
    HANDLE_CHARS,
    Compaction,
    Span,
    StrategyContext,
    span_of,
    trim_turn,
)
from app.engine.ledger import Ledger, build_ledger, recent
from app.engine.memo import Memo
from app.engine.outcomes import shorten
from app.engine.prompts import (
    LEDGER_HEADER,
    PRIOR_WORK_CONTINUED,
    PRIOR_WORK_HEADER,
    counted,
)
from app.engine.transcript import Message, Part, ToolCall, Turn

_RESULT_CHARS = 120
_SAID_CHARS = 200


@dataclass(frozen=True, slots=True)
class _RunNote:
    """A run's note without its header, and whether it is shorter than the run."""

    what: str
    body: tuple[str, ...]
    pays_first: bool  # under PRIOR_WORK_HEADER
    pays_continued: bool  # under PRIOR_WORK_CONTINUED


class FastStrategy:
    name = "fast"

    def __init__(self, *, cache_runs: int = 4096, cache_chars: int = 16_000_000) -> None:
        # Notes by span handle (a content digest). Keys have a fixed length, so the
        # bound counts entries: a note can be long, there are few of them.
        self._runs: Memo[str, _RunNote] = Memo(cache_runs * (HANDLE_CHARS + 1))
        # Lines by call and result: the newest run grows by a step per call, and its
        # note is rebuilt from lines made before.
        self._lines: Memo[_LineKey, str] = Memo(cache_chars, _weigh_line)

    def compact(self, messages: Sequence[Message], context: StrategyContext) -> Compaction:
        older, recent_turns = older_and_recent(context)
        out = list(messages[: context.segments.head_stop])
        spans: list[Span] = []
        dropped: list[Message] = []
        if older:
            region = messages[older[0].start : older[-1].stop]
            out.extend(self._notes(region, context, spans, dropped))
        settled = len(dropped)
        for k, turn in enumerate(recent_turns):
            kept, cut_spans, cut = trim_turn(
                messages[turn.start : turn.stop], context,
                keep_results=k == len(recent_turns) - 1,
            )
            out.extend(kept)
            spans.extend(cut_spans)
            dropped.extend(cut)
        return Compaction(tuple(out), tuple(spans), tuple(dropped), settled)

    def _notes(self, region: Sequence[Message], context: StrategyContext,
               spans: list[Span], dropped: list[Message]) -> list[Message]:
        """The older region with each run of work replaced by a note, where that pays."""
        groups: list[Message | list[Message]] = []
        for m in region:
            if m.role not in ("assistant", "tool"):
                groups.append(m)
            elif groups and isinstance(groups[-1], list):
                groups[-1].append(m)
            else:
                groups.append([m])
        out: list[Message] = []
        last_note = -1
        for g in groups:
            if isinstance(g, Message):
                out.append(g)
                continue
            span = span_of("compacted", g, context.handles)
            # Runs before the newest one come back unchanged on every step.
            run = self._runs.get(span.handle, partial(self._run_note, g, context))
            # A short reply between two user messages can be shorter than any note
            # about it: keep such a run as it was.
            if not (run.pays_continued if spans else run.pays_first):
                out.extend(g)
                continue
            header = PRIOR_WORK_HEADER if not spans else PRIOR_WORK_CONTINUED
            spans.append(span)
            dropped.extend(g)
            last_note = len(out)
            out.append(_message([header.format(what=run.what, handle=span.handle),
                                 *run.body]))
        if last_note >= 0:
            ledger = build_ledger(pairs(region), context.calls, context.outcomes)
            if ledger:
                note = out[last_note]
                out[last_note] = _message([*(p.text for p in note.parts),
                                           *render_ledger(ledger).split("\n")])
        return out

    def _run_note(self, run: Sequence[Message], context: StrategyContext,
                  _handle: str) -> _RunNote:
        what = _what(run)
        body = tuple(self._note_body(run, context))
        size = HANDLE_CHARS + len(what) + sum(map(len, body))
        return _RunNote(what, body, _longer(run, size + len(PRIOR_WORK_HEADER)),
                        _longer(run, size + len(PRIOR_WORK_CONTINUED)))

    def _note_body(self, run: Sequence[Message], context: StrategyContext) -> list[str]:
        lines: list[str] = []
        results = {m.tool_call_id: m for m in run if m.role == "tool"}
        for m in run:
            if m.role != "assistant":
                continue
            if not m.tool_calls and m.text.strip():
                said = " ".join(m.text[: _SAID_CHARS * 2].split())
                lines.append(f"- said: {shorten(said, _SAID_CHARS)}")
            for call in m.tool_calls:
                result = results.get(call.id)
                key = (call.name, call.arguments, result.text if result else None,
                       result is not None and result.is_error)
                lines.append(self._lines.get(key, partial(_call_line, call, result, context)))
        return lines


def _longer(run: Sequence[Message], chars: int) -> bool:
    """Whether the run's text and arguments exceed ``chars``; stops counting once they do."""
    total = 0
    for m in run:
        total += sum(len(p.text) for p in m.parts)
        total += sum(len(c.name) + len(c.arguments) for c in m.tool_calls)
        if total > chars:
            return True
    return False


def _what(run: Sequence[Message]) -> str:
    calls = sum(len(m.tool_calls) for m in run)
    replies = sum(1 for m in run if m.role == "assistant" and not m.tool_calls)
    return counted(calls, replies)


def _message(lines: list[str]) -> Message:
    # One part per line: lines repeat from call to call, so their token counts and
    # facts come from the caches; renderers join parts with newlines.
    return Message("user", tuple(Part("text", line) for line in lines))


# A call's name and arguments, its result's text and error flag.
_LineKey = tuple[str, str, str | None, bool]


def _weigh_line(key: _LineKey) -> int:
    return len(key[0]) + len(key[1]) + len(key[2] or "")


def _call_line(call: ToolCall, result: Message | None, context: StrategyContext,
               _key: _LineKey) -> str:
    head = f"- {context.calls.of(call).head}"
    if result is None:
        return head
    outcome = context.outcomes.of(result)
    if outcome.error:
        return f"{head} → ✗ {shorten(outcome.line, _RESULT_CHARS)}"
    return f"{head} → {shorten(outcome.line, _RESULT_CHARS) if outcome.line else '(no output)'}"


def older_and_recent(context: StrategyContext) -> tuple[tuple[Turn, ...], tuple[Turn, ...]]:
    """Turns past the tier's window, and the ones it keeps in full."""
    turns = context.segments.turns
    older = turns[: max(len(turns) - context.budget.full_turns, 0)]
    return older, turns[len(older):]


def pairs(region: Sequence[Message]) -> list[tuple[ToolCall, Message | None]]:
    results = {m.tool_call_id: m for m in region if m.role == "tool"}
    return [(c, results.get(c.id)) for m in region for c in m.tool_calls]


def render_ledger(ledger: Ledger) -> str:
    lines = [LEDGER_HEADER]
    for label, items in (("files read", ledger.files_read),
                         ("files written", ledger.files_written),
                         ("URLs fetched", ledger.urls)):
        if items:
            shown, more = recent(items)
            lines.append(f"- {label}: {', '.join(shown)}" + (f" (+{more} more)" if more else ""))
    if ledger.commands:
        shown, _ = recent(ledger.commands)
        lines.append(f"- commands run ({ledger.command_count}, latest last): "
                     + "; ".join(f"`{c}`" for c in shown[-6:]))
    if ledger.last_error:
        lines.append(f"- last error: {ledger.last_error}")
    return "\n".join(lines)

