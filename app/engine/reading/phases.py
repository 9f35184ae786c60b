"""Where an agent stands in its task, read deterministically from tool outcomes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from app.engine.reading.calls import CallSummaries
from app.engine.reading.outcomes import Outcomes
from app.engine.reading.verbs import ends_task
from app.engine.transcript.model import Message, calls_by_result


class Phase(StrEnum):
    ORIENT = "orient"
    GATHER = "gather"
    PRODUCE = "produce"
    SYNTHESIZE = "synthesize"
    VERIFY = "verify"


# Tools whose names say they create the deliverable, when the caller names none; found
# in the lowercased name (a case-insensitive regex costs ten times more per name).
OUTPUT_TOOL_WORDS = ("write", "create", "save", "send", "submit", "commit")
# Share of the iteration budget after which an agent should wrap up.
LATE_SHARE = 0.7
RECENT_TURNS = 3


@dataclass(frozen=True)
class PhaseOptions:
    required_tools: tuple[str, ...] = ()
    # None: use OUTPUT_TOOL_WORDS on tool names.
    output_tools: tuple[str, ...] | None = None
    iteration: int | None = None
    max_iterations: int | None = None


@dataclass(frozen=True, init=False)  # made per call: see transcript.Transcript
class Signals:
    iteration: int
    max_iterations: int | None
    tools_called: dict[str, int]
    required_tools: tuple[str, ...]
    required_missing: tuple[str, ...]
    outputs_done: tuple[str, ...]
    recent_errors: tuple[str, ...]
    # Files the agent changed (through any tool, the shell included), and whether it ran
    # tests after the last change: how a coding agent without required tools progresses.
    edited: tuple[str, ...]
    tested_after_edit: bool
    # Required tools that ran but never succeeded.
    required_failed: tuple[str, ...]

    def __init__(self, iteration: int, max_iterations: int | None,
                 tools_called: dict[str, int], required_tools: tuple[str, ...],
                 required_missing: tuple[str, ...], outputs_done: tuple[str, ...],
                 recent_errors: tuple[str, ...], edited: tuple[str, ...] = (),
                 tested_after_edit: bool = False,
                 required_failed: tuple[str, ...] = ()) -> None:
        object.__setattr__(self, "iteration", iteration)
        object.__setattr__(self, "max_iterations", max_iterations)
        object.__setattr__(self, "tools_called", tools_called)
        object.__setattr__(self, "required_tools", required_tools)
        object.__setattr__(self, "required_missing", required_missing)
        object.__setattr__(self, "outputs_done", outputs_done)
        object.__setattr__(self, "recent_errors", recent_errors)
        object.__setattr__(self, "edited", edited)
        object.__setattr__(self, "tested_after_edit", tested_after_edit)
        object.__setattr__(self, "required_failed", required_failed)

    @property
    def late(self) -> bool:
        return (self.max_iterations is not None
                and self.iteration >= LATE_SHARE * self.max_iterations)


def _is_output(name: str, options: PhaseOptions) -> bool:
    if options.output_tools is not None:
        return name in options.output_tools
    lower = name.lower()
    return any(word in lower for word in OUTPUT_TOOL_WORDS)


_SCRATCH_NAMES = ("reproduce", "repro", "debug", "check_", "verify", "tmp", "temp",
                  "scratch", "patch")
_SCRATCH_ENDS = (".txt", ".log", ".bak", ".backup", ".orig", ".rej", ".out")


def is_scratch(path: str) -> bool:
    """A file an agent writes to try something (a reproduction script, a log, a backup),
    not a change to the project: it says nothing of where the task stands."""
    name = path.rsplit("/", 1)[-1].lower()
    # A test module beside the project's tests is a change; one dropped at the top is a try.
    top_level_test = name.startswith("test_") and "/" not in path.removeprefix("./")
    return (path.startswith("/tmp/") or name.startswith(_SCRATCH_NAMES) or top_level_test
            or name.endswith(_SCRATCH_ENDS))


def observe(
    messages: Sequence[Message], options: PhaseOptions, outcomes: Outcomes | None = None,
    call_summaries: CallSummaries | None = None,
) -> Signals:
    outcomes = outcomes or Outcomes()
    summaries = call_summaries or CallSummaries()
    edited: dict[str, None] = {}
    tested = False
    called: dict[str, int] = {}
    succeeded: set[str] = set()
    # Output tools that ran since the user last spoke: a customer's new request after a
    # booking, or a user's next instruction after an edit, opens the work again.
    delivered: set[str] = set()
    calls = calls_by_result(messages)
    errors: list[tuple[int, str]] = []
    turn = 0
    task_seen = False
    for m in messages:
        if m.role == "user" and m.authored:
            if task_seen:
                delivered.clear()
                edited.clear()
                tested = False
            task_seen = True
        elif m.role == "assistant":
            turn += 1
            for call in m.tool_calls:
                called[call.name] = called.get(call.name, 0) + 1
        elif m.role == "tool":
            answered = calls.get(id(m))
            name = answered.name if answered is not None else "tool"
            outcome = outcomes.of(m)
            handed_back = ends_task(name)
            if handed_back:
                # The agent handed the task back and the run went on: whoever answered
                # (the user's feedback on the result, a harness refusing the finish)
                # opened the work again, as a user's new request does.
                delivered.clear()
                edited.clear()
                tested = False
            if outcome.error:
                # A write that failed changed nothing: it neither edits nor delivers.
                errors.append((turn, f"{name} -> {outcome.line}"))
                continue
            succeeded.add(name)
            if handed_back:
                continue  # not a deliverable: the work it handed back is open again
            writes = summaries.of(answered).writes if answered is not None else ()
            changed = [p for p in writes if not is_scratch(p)]
            # An output tool that wrote only a scratch file (a reproduction script) made
            # no deliverable.
            if not writes or changed:
                delivered.add(name)
            if changed:
                edited.update(dict.fromkeys(changed))
                tested = False
            elif edited and answered is not None and summaries.of(answered).runs_tests:
                tested = True
    iteration = options.iteration if options.iteration is not None else turn
    unmet = [t for t in options.required_tools
             if not _is_output(t, options) and t not in succeeded]
    # A required tool that ran and failed is not missing: it needs its cause fixed.
    missing = tuple(t for t in unmet if t not in called)
    failed = tuple(t for t in unmet if t in called)
    outputs = tuple(sorted(n for n in delivered if _is_output(n, options)))
    recent = tuple(text for at, text in errors if at > turn - RECENT_TURNS)
    return Signals(iteration, options.max_iterations, called, options.required_tools,
                   missing, outputs, recent, tuple(edited), tested, failed)


def classify(signals: Signals, options: PhaseOptions) -> Phase:
    if not signals.tools_called:
        return Phase.ORIENT
    if signals.outputs_done:
        return Phase.VERIFY
    if signals.required_missing or signals.required_failed:
        return Phase.GATHER
    expects_output = options.output_tools is not None or any(
        _is_output(t, options) for t in options.required_tools)
    if signals.required_tools or signals.late:
        return Phase.PRODUCE if expects_output else Phase.SYNTHESIZE
    # Without required tools, a coding agent's edits say where it is: changing files is
    # producing, running tests after the last change is verifying.
    if signals.edited:
        return Phase.VERIFY if signals.tested_after_edit else Phase.PRODUCE
    # Nothing else says gathering is over until the budget runs low.
    return Phase.GATHER
