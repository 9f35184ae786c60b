import pytest

from app.corpus import families, load, runs
from app.engine.jobs.synthesize.nudge import nudge
from app.engine.jobs.synthesize.synthesizer import SynthesisOptions
from app.engine.reading.phases import Phase, PhaseOptions, classify, observe
from app.engine.transcript.formats.openai import OpenAIFormat
from app.evaluation.replay import sample_steps
from tests.support.build import tool_turn
from tests.support.corpus import load_named


def run(formats, messages, **options):
    transcript = formats["openai"].parse({"messages": messages})
    opts = PhaseOptions(**options)
    signals = observe(transcript.messages, opts)
    return classify(signals, opts), signals


TASK = [{"role": "user", "content": "Book the cheapest flight and email the receipt."}]


def test_orient_before_any_call(formats):
    phase, signals = run(formats, TASK)
    assert phase is Phase.ORIENT
    assert signals.iteration == 0


def test_gather_names_missing_required_tools(formats):
    messages = TASK + tool_turn("a", "search_flights", {"to": "SEA"}, '{"flights": []}')
    phase, signals = run(formats, messages,
                         required_tools=("search_flights", "get_user", "send_email"))
    assert phase is Phase.GATHER
    assert signals.required_missing == ("get_user",)
    text = nudge(phase, signals, ()) or ""
    assert "get_user" in text and "Phase: gather" in text


def test_gathering_with_nothing_missing_and_no_failure_gets_no_nudge(formats):
    # Paid in full on every call (it follows the newest turn), a nudge that names nothing
    # is left out; it comes back as soon as it has something to say.
    messages = TASK + tool_turn("a", "search_flights", {"to": "SEA"}, '{"flights": []}')
    phase, signals = run(formats, messages)
    assert phase is Phase.GATHER and nudge(phase, signals, ()) is None
    failed = TASK + tool_turn("a", "search_flights", {"to": "SEA"}, "Error: timeout")
    phase, signals = run(formats, failed)
    assert phase is Phase.GATHER and "A recent call failed" in (nudge(phase, signals, ()) or "")


def test_failed_required_call_does_not_count_as_gathered(formats):
    messages = TASK + tool_turn("a", "get_user", {"id": 1}, "Error: user not found")
    phase, signals = run(formats, messages, required_tools=("get_user",))
    assert phase is Phase.GATHER
    assert signals.recent_errors and "user not found" in signals.recent_errors[0]
    # The failure is in the turns above; the nudge, paid in full on every call, only
    # says to change course.
    text = nudge(phase, signals, ()) or ""
    assert text.endswith("A recent call failed: change the approach rather than repeat it.")
    assert "user not found" not in text


def test_produce_when_inputs_are_in_and_the_output_tool_has_not_run(formats):
    messages = TASK + tool_turn("a", "get_user", {"id": 1}, '{"name": "Mia"}')
    phase, _ = run(formats, messages, required_tools=("get_user", "send_email"))
    assert phase is Phase.PRODUCE


def test_synthesize_when_everything_required_ran_and_no_output_tool(formats):
    messages = TASK + tool_turn("a", "get_user", {"id": 1}, '{"name": "Mia"}')
    phase, _ = run(formats, messages, required_tools=("get_user",))
    assert phase is Phase.SYNTHESIZE


def test_verify_once_a_deliverable_exists(formats):
    messages = TASK + tool_turn("a", "send_email", {"to": "m@x"}, "sent")
    phase, signals = run(formats, messages)
    assert phase is Phase.VERIFY
    assert "send_email" in nudge(phase, signals, ())


def test_explicit_output_tools_replace_the_name_rule(formats):
    messages = TASK + tool_turn("a", "send_email", {"to": "m@x"}, "sent")
    phase, _ = run(formats, messages, output_tools=("book_flight",))
    assert phase is Phase.GATHER


@pytest.mark.parametrize(("iteration", "expected"), [(5, Phase.GATHER), (15, Phase.SYNTHESIZE)])
def test_late_in_the_budget_without_required_tools(formats, iteration, expected):
    messages = TASK + tool_turn("a", "search", {"q": "x"}, "results")
    phase, _ = run(formats, messages, iteration=iteration, max_iterations=20)
    assert phase is expected


def _coding(*commands):
    from tests.support.build import tool_turn

    messages = [{"role": "user", "content": "Fix the month parsing in src/dates.py."}]
    for i, command in enumerate(commands):
        messages += tool_turn(f"c{i}", "bash", {"command": command}, "ok")
    return messages


def _phase_of(synthesizer, formats, messages):
    result = synthesizer.run(formats["openai"].parse({"messages": messages}),
                             SynthesisOptions())
    return result.phase, result.nudge


def test_a_coding_agent_without_required_tools_moves_on_by_its_edits(synthesizer, formats):
    reading = _coding("cat src/dates.py", "cat > reproduce.py << 'EOF'\nimport dates\nEOF",
                      "python reproduce.py")
    phase, _ = _phase_of(synthesizer, formats, reading)
    assert phase == Phase.GATHER  # a reproduction script is no change to the project
    editing = _coding("cat src/dates.py", "sed -i 's/s\\[5:7\\]/s[5:7].strip()/' src/dates.py")
    phase, nudge = _phase_of(synthesizer, formats, editing)
    assert phase == Phase.PRODUCE
    assert "Changes are under way." in nudge and "skip calls" not in nudge
    testing = _coding("sed -i 's/a/b/' src/dates.py", "python -m pytest tests/test_dates.py")
    phase, nudge = _phase_of(synthesizer, formats, testing)
    assert phase == Phase.VERIFY and "tests ran after it" in nudge
    again = _coding("sed -i 's/a/b/' src/dates.py", "pytest -x",
                    "sed -i 's/b/c/' src/dates.py")
    assert _phase_of(synthesizer, formats, again)[0] == Phase.PRODUCE  # edited since


def test_scratch_files_are_not_changes():
    from app.engine.reading.phases import is_scratch

    assert is_scratch("reproduce_issue.py") and is_scratch("/tmp/out.json")
    assert is_scratch("./pydicom/config.py.backup") and is_scratch("test_fix.py")
    assert not is_scratch("src/dates.py") and not is_scratch("tests/test_dates.py")


def test_a_new_request_after_the_deliverable_opens_the_work_again(formats):
    # A support agent books, then the customer asks for more: "then finish" would end
    # the conversation with the new request open.
    booked = TASK + tool_turn("a", "send_email", {"to": "m@x"}, "sent")
    asked = [*booked, {"role": "user", "content": "Also add a bag to that booking."}]
    phase, signals = run(formats, asked)
    assert phase is Phase.GATHER and signals.outputs_done == ()
    assert nudge(phase, signals, ()) is None  # nothing to name: no "finish"
    # Delivered again after the request: the deliverable is back.
    again = asked + tool_turn("b", "send_email", {"to": "m@x"}, "sent")
    assert run(formats, again)[0] is Phase.VERIFY


def test_edits_before_the_users_next_instruction_do_not_make_it_verify(formats):
    edit = tool_turn("a", "bash", {"command": "sed -i 's/a/b/' src/app.py"}, "")
    tested = tool_turn("b", "bash", {"command": "pytest tests"}, "3 passed")
    done = TASK + edit + tested
    assert run(formats, done)[0] is Phase.VERIFY
    more = [*done, {"role": "user", "content": "Now make the same change in src/cli.py."}]
    phase, signals = run(formats, more)
    assert phase is Phase.GATHER and signals.edited == ()


@pytest.mark.parametrize("finish", ["attempt_completion", "finish", "submit", "final_answer"])
def test_a_finish_the_run_went_on_after_opens_the_work_again(formats, finish):
    # The agent handed the task back, and its finishing call came back with an answer
    # (the user's feedback on the result, in an XML-tool harness): "then finish" would
    # tell it to hand back what the user has just asked it to change.
    delivered = TASK + tool_turn("a", "send_email", {"to": "m@x"}, "sent")
    assert run(formats, delivered)[0] is Phase.VERIFY
    answered = delivered + tool_turn("b", finish, {"result": "Done."},
                                     "The user has provided feedback: attach the receipt.")
    phase, signals = run(formats, answered)
    assert phase is Phase.GATHER and signals.outputs_done == ()
    assert nudge(phase, signals, ()) is None
    # Its next delivery is the deliverable again.
    again = answered + tool_turn("c", "send_email", {"to": "m@x", "attach": "r.pdf"}, "sent")
    assert run(formats, again)[0] is Phase.VERIFY
    # A finish the harness refused is a failure too.
    refused = delivered + tool_turn("b", finish, {"result": "Done."}, "Error: 2 tests failed")
    phase, signals = run(formats, refused)
    assert phase is Phase.GATHER and signals.recent_errors


def test_a_tool_that_finishes_something_else_is_no_finish(formats):
    booked = TASK + tool_turn("a", "send_email", {"to": "m@x"}, "sent") + tool_turn(
        "b", "finish_booking", {"id": "B1"}, "booked")
    assert run(formats, booked)[0] is Phase.VERIFY


def test_a_real_xml_tool_runs_feedback_on_its_completion_is_not_told_to_finish(
        synthesizer, formats):
    messages = load_named("roo-code-commander-2025-04-18-0009")
    # The user's feedback on the agent's attempt_completion, the newest message.
    at = next(i for i, m in enumerate(messages) if i > 40 and m["role"] == "user"
              and str(m["content"]).startswith("[attempt_completion] Result:"))
    result = synthesizer.run(formats["openai"].parse({"messages": messages[: at + 1]}),
                             SynthesisOptions())
    assert result.phase is not Phase.VERIFY
    assert "finish" not in (result.nudge or "")


def _called(lifted) -> bool:
    return any(m.tool_calls for m in lifted.messages if m.role == "assistant")


@pytest.mark.parametrize("family", sorted(families()))
def test_every_family_reads_its_tools_as_run(synthesizer, family):
    """Issue 58, item 5: in every run of every family, at eight calls spread over it, a
    run whose agent has acted (tool calls, or actions in its text, lifted to calls) is
    never read as orienting, nor told "No tool has run yet"."""
    wire = OpenAIFormat()
    paths = [run.path for run in runs() if run.family == family]
    assert paths, family
    for path in paths:
        messages = load(path)
        for k in sample_steps(messages, 8):
            prepared = synthesizer.prepare(wire.parse({"messages": messages[:k]}),
                                           SynthesisOptions())
            if _called(prepared.lifted):
                assert prepared.phase is not Phase.ORIENT, (path.name, k)
                assert "No tool has run yet" not in (prepared.nudge or ""), (path.name, k)
