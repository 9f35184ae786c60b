import json

import pytest

from app.engine.jobs.reflect.reflector import Call, PastIteration, Reflector
from app.engine.reading.outcomes import Outcomes


@pytest.fixture
def reflector():
    return Reflector(Outcomes())


GOAL = "find why test_parse fails in dates.py"
FAILING = Call("bash", '{"command": "pytest -x"}', "FAILED test_parse - ValueError: bad month")


def test_calls_are_enriched_and_ranked(reflector):
    calls = [Call("ls", "src", "a.py\nb.py"),
             Call("read_file", "dates.py", "def parse(s):\n    month = int(s[5:7])  # test_parse"),
             FAILING]
    r = reflector.heuristic(GOAL, calls, [])
    # The listing says nothing about the goal; the failing test is the evidence.
    assert [e.relevance for e in r.calls] == ["low", "high", "high"]
    assert r.calls[2].failed and "ValueError: bad month" in r.calls[2].learning
    assert r.progress == "advancing" and not r.stuck
    lines = r.reasoning_context.splitlines()
    assert lines[0].startswith("[high] read_file") and lines[1].startswith("[high] bash")
    assert lines[-1].startswith("[low] ls")


def test_relevance_is_rated_against_the_goal(reflector):
    goal = "Find why test_parse fails"
    failing = Call("bash", "pytest -x", "FAILED test_parse - ValueError: bad month")
    search = Call("web_search", "best pizza in Austin",
                  "Top 10 pizza places in Austin, TX: 1. Home Slice ...")
    r = reflector.heuristic(goal, [search, failing], [])
    assert [e.relevance for e in r.calls] == ["low", "high"]
    assert r.reasoning_context.splitlines()[0].startswith("[high] bash(pytest -x) -> failed: ")
    assert r.progress == "advancing"


def test_a_failure_unrelated_to_the_goal_stays_low(reflector):
    offline = Call("curl", "https://x.test", "curl: (6) Could not resolve host", "error")
    r = reflector.heuristic("Find why test_parse fails", [offline], [])
    assert r.calls[0].relevance == "low" and r.progress == "regressing"


def test_identical_failing_calls_are_stuck_by_the_third_iteration(reflector):
    history: list[PastIteration] = []
    verdicts = []
    for _ in range(3):
        r = reflector.heuristic(GOAL, [FAILING], history)
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
    r = reflector.from_reply(f"```json\n{reply}\n```", [FAILING], [])
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
        reflector.from_reply(reply, [FAILING], [])
