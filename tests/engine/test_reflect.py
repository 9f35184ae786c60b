import json

import pytest

from app.engine.jobs.reflect.reflector import Call, Iteration, PastIteration, Reflector
from app.engine.reading.outcomes import Outcomes
from app.engine.transcript.tokens import TokenCounter


@pytest.fixture
def reflector():
    return Reflector(Outcomes())


GOAL = "find why test_parse fails in dates.py"
FAILING = Call("bash", '{"command": "pytest -x"}', "FAILED test_parse - ValueError: bad month")


def test_calls_are_enriched_and_ranked(reflector):
    calls = [Call("ls", "src", "a.py\nb.py"),
             Call("read_file", "dates.py", "def parse(s):\n    month = int(s[5:7])  # test_parse"),
             FAILING]
    r = reflector.heuristic(Iteration(GOAL, tuple(calls)))
    # The listing says nothing about the goal; the failing test is the evidence.
    assert [e.relevance for e in r.calls] == ["low", "high", "high"]
    assert r.calls[2].failed and "ValueError: bad month" in r.calls[2].learning
    assert r.progress == "advancing" and not r.stuck
    lines = r.reasoning_context.splitlines()
    assert lines[0].startswith("[high] read_file(dates.py): read_file returned: def parse")
    assert lines[1].startswith("[high] bash(") and "ValueError: bad month" in lines[1]
    assert lines[-1].startswith("[low] ls(src): ")


def test_relevance_is_rated_against_the_goal(reflector):
    goal = "Find why test_parse fails"
    failing = Call("bash", "pytest -x", "FAILED test_parse - ValueError: bad month")
    search = Call("web_search", "best pizza in Austin",
                  "Top 10 pizza places in Austin, TX: 1. Home Slice ...")
    r = reflector.heuristic(Iteration(goal, tuple([search, failing]), tuple([])))
    assert [e.relevance for e in r.calls] == ["low", "high"]
    first = r.reasoning_context.splitlines()[0]
    assert first == "[high] bash(pytest -x): bash shows the failure: FAILED test_parse - " \
        "ValueError: bad month"
    assert r.progress == "advancing"


def test_a_failure_unrelated_to_the_goal_stays_low(reflector):
    offline = Call("curl", "https://x.test", "curl: (6) Could not resolve host", "error")
    r = reflector.heuristic(Iteration("Find why test_parse fails", tuple([offline]), tuple([])))
    assert r.calls[0].relevance == "low" and r.progress == "regressing"


def test_identical_failing_calls_are_stuck_by_the_third_iteration(reflector):
    history: list[PastIteration] = []
    verdicts = []
    for _ in range(3):
        r = reflector.heuristic(Iteration(GOAL, tuple([FAILING]), tuple(history)))
        verdicts.append(r.stuck)
        history.append(PastIteration(r.progress, (FAILING,)))
    assert verdicts == [False, False, True]
    assert "bash was called 3 times" in r.stuck_reason
    assert r.recovery_prompt.startswith("[contextsynth] You look stuck")


def test_valid_llm_json_is_used(reflector):
    reply = json.dumps({"calls": [{"insights": ["month parsing is off by one"],
                                   "learning": "slice is wrong", "relevance": "high",
                                   "next_suggested_actions": ["fix the slice"]}],
                        "synthesis": "found the bug", "progress_assessment": "advancing"})
    r = reflector.from_reply(f"```json\n{reply}\n```", Iteration(GOAL, (FAILING,)))
    assert r.calls[0].relevance == "high" and r.synthesis == "found the bug"


@pytest.mark.parametrize(("reply", "problem"), [
    ("not json", "no JSON object"),
    ('{"calls": [], "synthesis": "x", "progress_assessment": "advancing"}', "1 entries"),
    ('{"calls": [{"insights": [], "learning": "x", "relevance": "huge", '
     '"next_suggested_actions": []}], "synthesis": "x", "progress_assessment": "advancing"}',
     "relevance"),
])
def test_invalid_llm_json_says_what_is_wrong(reflector, reply, problem):
    with pytest.raises(ValueError, match=problem):
        reflector.from_reply(reply, Iteration(GOAL, (FAILING,)))


def test_the_reasoning_context_holds_the_feedback_and_the_insights_within_its_budget(encoder):
    # Layer 2 is what the agent carries into its next prompt: what the user said first,
    # then each call's insights, most relevant first, cut at the budget with a count.
    counter = TokenCounter(encoder)
    reflector = Reflector(Outcomes(), counter.text)
    reads = tuple(Call("read_file", f"src/module_{i}.py", f"def helper_{i}():\n    pass")
                  for i in range(40))
    it = Iteration("find why test_parse fails in dates.py", (FAILING, *reads),
                   user_feedback="Stop reading random modules; the bug is in dates.py.",
                   context_tokens=120)
    r = reflector.heuristic(it)
    lines = r.reasoning_context.splitlines()
    assert lines[0] == "user feedback: Stop reading random modules; the bug is in dates.py."
    assert lines[1].startswith('[high] bash({"command": "pytest -x"})')
    assert lines[-1].startswith("(") and "more calls left out" in lines[-1]
    shown = len(lines) - 2
    assert f"({41 - shown} more calls left out, {41 - shown} of them of low relevance)" \
        == lines[-1]
    assert counter.text(r.reasoning_context) <= 120
    wide = reflector.heuristic(Iteration(it.goal, it.calls, context_tokens=8000))
    assert len(wide.reasoning_context.splitlines()) == 41  # everything, no feedback line


def test_deep_mode_reads_the_rationale_and_the_feedback_fenced(reflector):
    call = Call("bash", "pytest -x", "FAILED", rationale="to see which test fails first")
    prompt = reflector.prompt(Iteration(GOAL, (call,), user_feedback="Focus on dates.py"))
    user = prompt[1].content
    transcript = user.split("<transcript>", 1)[1].split("</transcript>", 1)[0]
    assert "why: to see which test fails first" in transcript
    assert "The user's feedback:\nFocus on dates.py" in transcript
