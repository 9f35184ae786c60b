"""The steering nudge: what the agent is told, from where it stands in its task.

It is the last message of a ``/synthesize`` answer, after the newest turn, so no
provider cache ever holds it: it says only what the turns above do not.
"""

from __future__ import annotations

from app.engine.prompts import MARKER
from app.engine.reading.phases import Phase, Signals

_NUDGES: dict[Phase, str] = {
    Phase.ORIENT: "No tool has run yet. Start by gathering what the task needs{required}.",
    Phase.GATHER: "Gather what is still missing{missing} before producing the result; skip "
                  "calls whose answers are already above.",
    Phase.PRODUCE: "The inputs are gathered. Create the deliverable now{outputs}.",
    Phase.SYNTHESIZE: "Everything required has run. Answer the task from the evidence above; "
                      "call another tool only if something essential is missing.",
    Phase.VERIFY: "The deliverable exists ({done}). Check it against the task, then finish.",
}


# A coding agent's phases, read from its edits rather than from output tools.
_EDIT_NUDGES: dict[Phase, str] = {
    Phase.PRODUCE: "Changes are under way. Finish the change, then run the tests that "
                   "cover it.",
    Phase.VERIFY: "The change is made and tests ran after it. Check the result against the "
                  "task, then finish.",
}
# The nudge sits after the newest turn, so no provider cache ever holds it: it is paid in
# full on every call and says only what the turns above do not (the files edited and the
# failure are there to read).
_FAILED = " A recent call failed: change the approach rather than repeat it."
# Every required tool has run, but some never succeeded.
_FAILED_REQUIRED = ("Required tools ran but failed: {failed}. Fix the cause, then run them "
                    "again.")


def nudge(phase: Phase, signals: Signals, output_tools: tuple[str, ...]) -> str | None:
    """The nudge for ``phase``, or None when it would name nothing: an agent gathering with
    no required tool missing and no recent failure is doing what the nudge would say, and
    the nudge costs its tokens in full on every call."""
    missing = ", ".join(signals.required_missing)
    if phase is Phase.GATHER and not missing and not signals.recent_errors \
            and not signals.required_failed:
        return None
    if phase is Phase.ORIENT and signals.iteration > 1:
        # Turns were taken and no call was read in them: the agent acts in a shape not
        # read here (or only talks), and "no tool has run yet" may be false.
        return None
    template = _NUDGES[phase]
    if phase is Phase.GATHER and not missing and signals.required_failed:
        template = _FAILED_REQUIRED
    if signals.edited and not signals.outputs_done and phase in _EDIT_NUDGES:
        template = _EDIT_NUDGES[phase]
    body = template.format(
        required=f" ({', '.join(signals.required_tools)})" if signals.required_tools else "",
        missing=f": {missing}" if missing else "",
        outputs=f" with {', '.join(output_tools)}" if output_tools else "",
        done=", ".join(signals.outputs_done) or "output tool called",
        failed=", ".join(signals.required_failed),
    )
    return f"{MARKER} Phase: {phase.value}. {body}" + (_FAILED if signals.recent_errors else "")
