"""``/summarize-trace``: shrink a ReAct action trace, grouping older actions by tool.

Strategies, from most to least ambitious: ``llm`` (outcome lines per tool from
the synthesis model), ``deterministic`` (the same lines built from the
actions), ``truncation`` (every observation cut) and ``none`` (under the
trigger). A summary that saves too little falls back to truncation.

With a token budget the output never passes it: past it the trace is summarized
whatever the trigger says, then the recent observations are cut shorter, then the
oldest recent actions join the summary, then the summary's lines are cut.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from app.engine import jsontext
from app.engine.compaction.base import Handles
from app.engine.errors import BudgetTooSmall, InvalidTranscript
from app.engine.jobs.caches import EngineCaches
from app.engine.prompts import (
    TRACE_CLOSE,
    TRACE_OPEN,
    TRACE_SYSTEM,
    TRACE_USER,
    PromptMessage,
    fence,
)
from app.engine.reading.facts import Facts
from app.engine.reading.outcomes import first_line, quoted, shorten
from app.engine.transcript.model import Message, Part
from app.engine.transcript.tokens import TokenCounter

_STEP = re.compile(r"^(Thought|Action Input|Action|Observation|Outcome|Final Answer):[ \t]?",
                   re.MULTILINE)
_INPUT_CHARS = 60
_LINE_CHARS = 100
_OLD_OBSERVATION_CHARS = 200
# Under a budget: the shortest a recent observation, and a summary's line, is cut to.
_LEAST_OBSERVATION_CHARS = 50
_LEAST_LINE_CHARS = 60


@dataclass(frozen=True)
class Action:
    action: str
    action_input: str = ""
    observation: str = ""
    outcome: str | None = None  # success, error, failure or timeout, when the caller knows
    thought: str | None = None


@dataclass(frozen=True)
class TraceOptions:
    trigger: int = 10
    keep: int = 5
    observation_chars: int = 1000
    large_chars: int = 30_000  # past this size the trace counts as large
    large_trigger: int = 5
    large_keep: int = 3
    min_llm_chars: int = 2_000  # under this an LLM call is not worth its cost
    min_saving: float = 0.10
    budget_tokens: int | None = None  # the most tokens the output may have


@dataclass(frozen=True)
class Group:
    tool: str
    calls: int
    summary: str
    paths: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    # What the inputs name that a later step may look for again: ids (JG7FMM,
    # mia_li_3668), numbers and dates, codes (MSP), and the paths above.
    identifiers: tuple[str, ...] = ()


@dataclass(frozen=True)
class Scratchpad:
    """A ReAct scratchpad read into actions, with what comes before the first step (the
    question) and after the last action (a thought with no action yet, a final answer):
    text that is no action, but the agent's, and goes back as it came."""

    actions: tuple[Action, ...]
    head: str = ""
    tail: str = ""


@dataclass(frozen=True)
class TracePlan:
    actions: tuple[Action, ...]
    options: TraceOptions
    trigger: int
    keep: int
    # The whole trace as given, observations in full, when it is the answer (the plan
    # did not fire); empty when it fired, so that a large trace's copy is not held while
    # it is summarized (``whole`` renders it again in the rare case that is the answer).
    text: str
    chars_before: int
    tokens_before: int
    fired: bool
    reason: str
    llm_worth_it: bool
    groups: tuple[Group, ...] = ()
    prompt: tuple[PromptMessage, ...] = ()
    head: str = ""  # a scratchpad's text before its first step, and after its last action
    tail: str = ""

    def whole(self) -> str:
        """The whole trace as given."""
        return self.text if not self.fired else self.framed(render_trace(self.actions,
                                                                         10**9))

    def framed(self, body: str) -> str:
        """``body`` between the scratchpad's head and tail."""
        return "\n".join(part for part in (self.head, body, self.tail) if part)

    @property
    def older(self) -> tuple[Action, ...]:
        return self.actions[: len(self.actions) - self.keep] if self.fired else ()

    @property
    def recent(self) -> tuple[Action, ...]:
        return self.actions[len(self.older):]


@dataclass(frozen=True)
class TraceResult:
    text: str
    strategy: str  # none | deterministic | llm | truncation
    groups: tuple[Group, ...]
    recent: tuple[Action, ...]
    chars_before: int
    chars_after: int
    tokens_before: int
    tokens_after: int
    reason: str
    handle: str | None = None  # names the older actions, when they were replaced
    summarized: tuple[Action, ...] = ()
    lost: Facts = field(default_factory=Facts)


def parse_scratchpad(text: str) -> list[Action]:
    """``Thought: / Action: / Action Input: / Observation:`` blocks into actions."""
    return list(read_scratchpad(text).actions)


def read_scratchpad(text: str) -> Scratchpad:
    """The actions of a scratchpad, and the text before and after them (see
    ``Scratchpad``)."""
    marks = list(_STEP.finditer(text))
    if not any(m.group(1) == "Action" for m in marks):
        raise InvalidTranscript(
            "the scratchpad has no 'Action:' line; send ReAct text with 'Thought:', "
            "'Action:', 'Action Input:' and 'Observation:' lines, or send 'actions'.",
            pointer="/scratchpad")
    actions: list[Action] = []
    current: dict[str, str] = {}
    started = 0  # where the fields in ``current`` start
    tail_at: int | None = None
    for n, mark in enumerate(marks):
        end = marks[n + 1].start() if n + 1 < len(marks) else len(text)
        key, value = mark.group(1), text[mark.end() : end].strip()
        if key in ("Thought", "Action", "Final Answer") and "Action" in current:
            actions.append(_action(current))
            current = {}
        if key == "Final Answer":
            # The answer ends the trace, with the thought that led to it.
            tail_at = started if current else mark.start()
            break
        if not current:
            started = mark.start()
        current[key] = value
    else:
        if "Action" in current:
            actions.append(_action(current))
        elif current:
            tail_at = started  # the agent's newest thought, its action still to come
    tail = text[tail_at:].strip() if tail_at is not None else ""
    return Scratchpad(tuple(actions), text[: marks[0].start()].strip(), tail)


def _action(fields: dict[str, str]) -> Action:
    return Action(fields["Action"], fields.get("Action Input", ""),
                  fields.get("Observation", ""), fields.get("Outcome"), fields.get("Thought"))


def render_action(action: Action, observation_chars: int) -> str:
    lines = []
    if action.thought:
        lines.append(f"Thought: {action.thought}")
    lines.append(f"Action: {action.action}")
    lines.append(f"Action Input: {action.action_input}")
    lines.append(f"Observation: {shorten(action.observation, observation_chars)}")
    return "\n".join(lines)


def render_trace(actions: Sequence[Action], observation_chars: int) -> str:
    return "\n".join(render_action(a, observation_chars) for a in actions)


_LIST_MARK = re.compile(r"^(?:[-*+]|\d+[.)])\s+")
# A path-like word: it has a slash, or ends in a file extension ("setup.py", not "1.5").
_PATH_WORD = re.compile(r"[\w./@~-]*[\w@~-]/?")
_EXTENSION = re.compile(r"\w\.[A-Za-z]\w{0,4}$")


def paths_in(action_input: str) -> list[str]:
    """The file and directory paths a tool input names. Only the first line of each
    value is read: what follows is usually a heredoc or script body, whose dotted
    names (``sys.modules``) are code, not files. URLs are not paths."""
    try:
        value = jsontext.loads(action_input)
    except ValueError:
        value = action_input
    texts = [v for v in value.values() if isinstance(v, str)] if isinstance(value, dict) \
        else [action_input]
    found = []
    for text in texts:
        line = text.split("\n", 1)[0]
        for match in _PATH_WORD.finditer(line):
            word = match.group(0)
            if word.startswith("//"):
                continue  # the rest of a URL
            if ("/" in word and any(c.isalpha() for c in word)) or _EXTENSION.search(word):
                found.append(word)
    return list(dict.fromkeys(found))


# An identifier in a tool's input: a word with a digit in it (an id, a number, a date), or
# a code in capitals; JSON keys are not among them.
_IDENTIFIER = re.compile(r"(?<![\w.-])(?:[\w.-]*\d[\w.-]*|[A-Z]{3,})(?![\w.-])")


def identifiers_in(action_input: str) -> list[str]:
    """The identifiers an input names (see ``_IDENTIFIER``), with its paths."""
    try:
        value = jsontext.loads(action_input)
    except ValueError:
        value = action_input
    texts = [v if isinstance(v, str) else jsontext.dumps(v) for v in value.values()] \
        if isinstance(value, dict) else [action_input]
    found = [w.strip(".-") for text in texts for w in _IDENTIFIER.findall(text)]
    return list(dict.fromkeys([w for w in found if len(w) >= 2] + paths_in(action_input)))


def _counted(tool: str, calls: int) -> str:
    return f"{tool} ({calls} call{'s' if calls != 1 else ''})"


def _after_head(line: str) -> str:
    """The model's line without its ``name (N calls):`` head, which the engine writes with
    the true count."""
    return re.sub(r"^[^(:]*(?:\([^)]*\))?\s*:?\s*", "", line, count=1) or line


def _leaves_out(line: str, group: Group) -> str | None:
    """What the line leaves out that the group's deterministic line keeps: a path (its
    file name at least), the start of an error line, or every identifier of the inputs;
    None when it keeps all that."""
    lowered = line.lower()
    paths = [p for p in group.paths
             if p.rstrip("/").rsplit("/", 1)[-1].lower() not in lowered]
    if paths:
        return f"the path {paths[0]}"
    # The engine's own words ("no output, exit 1", the "(at file:line)" it adds) are
    # nothing a model could quote from the trace: only the failure's text is asked for.
    errors = [e for e in (quoted(e) for e in group.errors) if e[:60].lower() not in lowered]
    if errors:
        return f"the error {shorten(errors[0], 60)!r}"
    if group.identifiers and not any(i.lower() in lowered for i in group.identifiers):
        return f"every identifier of its inputs ({', '.join(group.identifiers[:3])})"
    return None


def trace_handle(actions: Sequence[Action]) -> str:
    h = Handles.start()
    for a in actions:
        for value in (a.action, a.action_input, a.observation):
            h.update(value.encode("utf-8", "surrogatepass"))
            h.update(b"\0")
    return Handles.name(h)


class TraceSummarizer:
    def __init__(self, counter: TokenCounter, caches: EngineCaches) -> None:
        self._counter = counter
        self._outcomes = caches.outcomes
        self._facts = caches.facts

    def plan(self, actions: Sequence[Action], options: TraceOptions,
             frame: tuple[str, str] = ("", "")) -> TracePlan:
        """``frame``: a scratchpad's head and tail, which go back as they came."""
        if not actions:
            raise InvalidTranscript("the trace is empty; send at least one action.",
                                    pointer="/actions")
        actions = tuple(actions)
        head, tail = frame
        full = "\n".join(p for p in (head, render_trace(actions, 10**9), tail) if p)
        before = len(full)
        tokens = self._counter.text(full)
        large = before > options.large_chars
        trigger = options.large_trigger if large else options.trigger
        keep = options.large_keep if large else options.keep
        size = f"{before} characters" + (" (large)" if large else "")
        budget = options.budget_tokens
        if budget is not None and tokens > budget:
            # Past the budget the trace is summarized whatever the trigger says (the
            # newest action stays when there are others), and finish keeps fewer recent
            # actions if they do not fit.
            return self._fired(actions, options, trigger, min(keep, len(actions) - 1),
                               before, tokens, f"over the budget ({tokens} > {budget} "
                               "tokens)", frame)
        if len(actions) <= trigger:
            return TracePlan(actions, options, trigger, keep, full, before, tokens, False,
                             f"{len(actions)} actions, not over the trigger of {trigger} "
                             f"for {size}", False, head=head, tail=tail)
        if keep >= len(actions):
            return TracePlan(actions, options, trigger, keep, full, before, tokens, False,
                             f"keep ({keep}) covers all {len(actions)} actions: nothing older "
                             "to summarize", False, head=head, tail=tail)
        del full
        return self._fired(actions, options, trigger, keep, before, tokens,
                           f"{len(actions)} actions, over the trigger of {trigger} for {size}",
                           frame)

    def _fired(self, actions: tuple[Action, ...], options: TraceOptions, trigger: int,
               keep: int, before: int, tokens: int, reason: str,
               frame: tuple[str, str]) -> TracePlan:
        plan = TracePlan(actions, options, trigger, keep, "", before, tokens, True, reason,
                         before >= options.min_llm_chars, head=frame[0], tail=frame[1])
        groups = self._groups(plan.older)
        return replace(plan, groups=groups, prompt=self._prompt(plan.older))

    def _is_error(self, action: Action) -> tuple[bool, str]:
        if action.outcome is not None:
            failed = action.outcome.lower() in ("error", "failure", "failed", "timeout")
            outcome = self._outcomes.of(Message("tool", (Part("text", action.observation),),
                                                is_error=failed))
            return failed, outcome.line
        outcome = self._outcomes.of(Message("tool", (Part("text", action.observation),)))
        return outcome.error, outcome.line

    def _groups(self, older: Sequence[Action]) -> tuple[Group, ...]:
        by_tool: dict[str, list[Action]] = {}
        for action in older:
            by_tool.setdefault(action.action, []).append(action)
        groups = []
        for tool, calls in by_tool.items():
            parts, paths, errors, identifiers = [], [], [], []
            for call in calls:
                failed, line = self._is_error(call)
                shown = shorten(" ".join(call.action_input.split()), _INPUT_CHARS)
                named = paths_in(call.action_input)
                # The cut keeps the input's start; a path past it is named after it, as
                # the paths are what a later step looks for.
                cut = [p for p in named if p not in shown]
                if cut:
                    shown += f" [{', '.join(cut)}]"
                result = f"failed: {shorten(line, _LINE_CHARS)}" if failed else shorten(
                    first_line(call.observation) or "(no output)", _LINE_CHARS)
                parts.append(f"{shown} -> {result}")
                paths += named
                identifiers += identifiers_in(call.action_input)
                if failed:
                    errors.append(shorten(line, 200))
            summary = f"{tool} ({len(calls)} call{'s' if len(calls) != 1 else ''}): " + \
                "; ".join(parts)
            groups.append(Group(tool, len(calls), summary, tuple(dict.fromkeys(paths)),
                                tuple(dict.fromkeys(errors)),
                                tuple(dict.fromkeys(identifiers))))
        return tuple(groups)

    def _prompt(self, older: Sequence[Action]) -> tuple[PromptMessage, ...]:
        """The older actions grouped by tool, each group headed by its name and count, as
        the system prompt promises: the model summarizes, it does not sort or count."""
        by_tool: dict[str, list[Action]] = {}
        for action in older:
            by_tool.setdefault(action.action, []).append(action)
        blocks = [f"{_counted(tool, len(calls))}\n"
                  + "\n".join(self._shown(a) for a in calls)
                  for tool, calls in by_tool.items()]
        text = "\n\n".join(blocks)
        return (PromptMessage("system", TRACE_SYSTEM),
                PromptMessage("user", TRACE_USER.format(transcript=fence(text))))

    def _shown(self, action: Action) -> str:
        """One action for the prompt, its observation cut; a failure's line is added when
        the cut hides it, since the model is asked to quote it."""
        chars = _OLD_OBSERVATION_CHARS * 4
        text = render_action(action, chars)
        failed, line = self._is_error(action)
        own = quoted(line)
        if failed and own and len(action.observation) > chars and own not in text:
            text += f"\n{own}"
        return text

    def llm_groups(self, plan: TracePlan, reply: str) -> tuple[tuple[Group, ...] | None, str]:
        """Groups with the model's lines, where they keep what the deterministic line keeps,
        and why the lines not used were not.

        A line belongs to a tool when it starts with that exact name (``read`` does not
        take a ``read_file`` line). A group whose line is missing, or leaves out a path,
        an error line or every identifier of its inputs, keeps its deterministic line.
        None when no group could use the model's line: the reply is unusable.
        """
        lines = [_LIST_MARK.sub("", line.strip()) for line in reply.splitlines()
                 if line.strip()]
        out = []
        why: list[str] = []
        used = 0
        for group in plan.groups:
            named = re.compile(r"[`*_]*" + re.escape(group.tool) + r"[`*_]*\s*[(:]")
            line = next((ln for ln in lines if named.match(ln)), None)
            if line is None:
                out.append(group)
                why.append(f"{group.tool}: its line is missing")
                continue
            missing = _leaves_out(line, group)
            if missing is not None:
                out.append(group)
                why.append(f"{group.tool}: the line leaves out {missing}")
                continue
            used += 1
            out.append(replace(group, summary=f"{_counted(group.tool, group.calls)}: "
                               + _after_head(line)))
        return (tuple(out) if used else None), "; ".join(why)

    def finish(self, plan: TracePlan, groups: tuple[Group, ...] | None,
               strategy: str) -> TraceResult:
        result = self._finish(plan, groups, strategy)
        budget = plan.options.budget_tokens
        if budget is None or result.tokens_after <= budget:
            return result
        return self._within(plan, groups if groups is not None and strategy == "llm"
                            else plan.groups, strategy if strategy == "llm"
                            else "deterministic", budget)

    def _within(self, plan: TracePlan, groups: tuple[Group, ...], strategy: str,
                budget: int) -> TraceResult:
        """The summary cut to ``budget``: shorter recent observations first, then fewer
        recent actions (the oldest join the summary, as their own lines), then shorter
        summary lines; refused when the scratchpad's own text alone is past it."""
        recent = plan.recent
        reason = f"{plan.reason}; cut to the budget of {budget} tokens"

        def text(lines: Sequence[str], kept: Sequence[Action], chars: int) -> str:
            summary = "\n".join([TRACE_OPEN, *lines, TRACE_CLOSE])
            rest = render_trace(kept, chars)
            return plan.framed(f"{summary}\n{rest}" if rest else summary)

        def done(body: str, moved: int, all_groups: tuple[Group, ...]) -> TraceResult:
            # The actions moved into the summary are older ones now: the handle and the
            # receipt cover them.
            fitted = replace(plan, keep=len(recent) - moved)
            return self._replaced(fitted, body, strategy, all_groups, plan.tokens_before,
                                  reason)

        chars = plan.options.observation_chars
        for moved in range(len(recent)):
            kept = recent[moved:]
            extra = self._groups(recent[:moved]) if moved else ()
            lines = [g.summary for g in (*groups, *extra)]
            while True:
                body = text(lines, kept, chars)
                if self._counter.text(body) <= budget:
                    return done(body, moved, (*groups, *extra))
                if chars <= _LEAST_OBSERVATION_CHARS:
                    break
                chars = max(chars // 2, _LEAST_OBSERVATION_CHARS)
        moved = max(len(recent) - 1, 0)
        all_groups = (*groups, *self._groups(recent[:moved]))
        lines = [g.summary for g in all_groups]
        line_chars = max((len(line) for line in lines), default=0)
        while True:
            line_chars = max(line_chars // 2, _LEAST_LINE_CHARS)
            body = text([shorten(line, line_chars) for line in lines], recent[moved:],
                        _LEAST_OBSERVATION_CHARS)
            least = self._counter.text(body)
            if least <= budget:
                return done(body, moved, all_groups)
            if line_chars <= _LEAST_LINE_CHARS:
                break
        raise BudgetTooSmall(
            f"the trace's summary, its newest action and the scratchpad's own text take "
            f"{least} tokens at the least, past 'budget_tokens' {budget}; send a budget "
            f"of at least {least} tokens.", pointer="/budget_tokens")

    def _finish(self, plan: TracePlan, groups: tuple[Group, ...] | None,
                strategy: str) -> TraceResult:
        options = plan.options
        tokens_before = plan.tokens_before
        if not plan.fired or groups is None:
            return TraceResult(plan.whole(), "none", (), plan.actions, plan.chars_before,
                               plan.chars_before, tokens_before, tokens_before, plan.reason)
        summary = "\n".join([TRACE_OPEN, *(g.summary for g in groups), TRACE_CLOSE])
        text = plan.framed(summary + "\n" + render_trace(plan.recent,
                                                         options.observation_chars))
        if len(text) > plan.chars_before * (1 - options.min_saving):
            return self._truncation(plan, tokens_before,
                                    f"the summary saved under {options.min_saving:.0%}")
        return self._replaced(plan, text, strategy, groups, tokens_before, plan.reason)

    def _replaced(self, plan: TracePlan, text: str, strategy: str,
                  groups: tuple[Group, ...], tokens_before: int, reason: str) -> TraceResult:
        older = plan.older
        dropped = [v for a in older for v in (a.action_input, a.observation)]
        lost = self._facts.lost(dropped, [text])
        return TraceResult(text, strategy, groups, plan.recent, plan.chars_before, len(text),
                           tokens_before, self._counter.text(text), reason,
                           trace_handle(older), older, lost)

    def _truncation(self, plan: TracePlan, tokens_before: int, why: str) -> TraceResult:
        older = render_trace(plan.older, _OLD_OBSERVATION_CHARS)
        recent = render_trace(plan.recent, plan.options.observation_chars)
        text = plan.framed(f"{older}\n{recent}" if older else recent)
        if len(text) >= plan.chars_before:
            return TraceResult(plan.whole(), "none", (), plan.actions, plan.chars_before,
                               plan.chars_before, tokens_before, tokens_before,
                               f"{why}, and truncation would not shrink it either")
        return self._replaced(plan, text, "truncation", (), tokens_before, why)
