import pytest

from app.engine.errors import InvalidTranscript
from app.engine.prompts import TRACE_CLOSE, TRACE_OPEN
from app.engine.synthesis import EngineCaches
from app.engine.tokens import TokenCounter
from app.engine.trace import Action, TraceOptions, TraceSummarizer, parse_scratchpad
from tests.support.corpus import load, transcript_files
from tests.support.traces import to_actions

SCRATCHPAD = """Thought: I should look around.
Action: list_files
Action Input: src/
Observation: main.py
util.py
Thought: Read the entry point.
Action: read_file
Action Input: src/main.py
Observation: def main():
    return 1
Action: read_file
Action Input: src/missing.py
Observation: Error: No such file or directory: src/missing.py
"""


@pytest.fixture
def summarizer(encoder):
    return TraceSummarizer(TokenCounter(encoder), EngineCaches())


def actions(n: int, size: int = 400) -> list[Action]:
    out = []
    for i in range(n):
        tool = ("list_files", "read_file", "run_tests")[i % 3]
        body = f"line {i}\n" + "word " * (size // 5)
        if i % 4 == 3:
            body = f"Error: exit status 1 in step {i}\n" + body
        out.append(Action(tool, f"src/file_{i}.py", body))
    return out


def test_scratchpad_parses_into_actions():
    parsed = parse_scratchpad(SCRATCHPAD)
    assert [(a.action, a.action_input) for a in parsed] == [
        ("list_files", "src/"), ("read_file", "src/main.py"), ("read_file", "src/missing.py")]
    assert parsed[0].thought == "I should look around." and parsed[2].thought is None
    assert parsed[1].observation == "def main():\n    return 1"


def test_scratchpad_without_actions_is_rejected():
    with pytest.raises(InvalidTranscript, match="'Action:'"):
        parse_scratchpad("Thought: nothing to do")


def test_under_the_trigger_nothing_happens(summarizer):
    plan = summarizer.plan(actions(8), TraceOptions())
    result = summarizer.finish(plan, plan.groups or None, "deterministic")
    assert result.strategy == "none" and "not over the trigger of 10" in result.reason


def test_older_actions_are_grouped_by_tool_with_paths_and_errors(summarizer):
    plan = summarizer.plan(actions(14), TraceOptions())
    result = summarizer.finish(plan, plan.groups, "deterministic")
    assert result.strategy == "deterministic"
    assert len(result.recent) == 5
    assert result.text.startswith(TRACE_OPEN)
    assert result.text.index(TRACE_CLOSE) < result.text.index("Action: ")
    by_tool = {g.tool: g for g in result.groups}
    assert by_tool["list_files"].summary.startswith("list_files (3 calls): src/file_0.py -> ")
    assert "src/file_3.py" in by_tool["list_files"].paths
    assert by_tool["list_files"].errors == ("Error: exit status 1 in step 3",)
    assert result.tokens_after < result.tokens_before / 2


def test_large_traces_use_the_large_thresholds(summarizer):
    plan = summarizer.plan(actions(7, size=6000), TraceOptions())
    assert plan.fired and (plan.trigger, plan.keep) == (5, 3)
    assert len(plan.older) == 4


def test_summary_that_saves_too_little_falls_back_to_truncation(summarizer):
    tiny = [Action("ping", "", f"pong {i}\n" + "x" * 300) for i in range(12)]
    plan = summarizer.plan(tiny, TraceOptions(min_saving=0.9))
    result = summarizer.finish(plan, plan.groups, "deterministic")
    assert result.strategy == "truncation" and "under 90%" in result.reason


def test_model_lines_must_name_every_tool(summarizer):
    plan = summarizer.plan(actions(14), TraceOptions())
    good = ("- list_files (3 calls): listed src; file_3 failed\nread_file (3 calls): read "
            "three files\nrun_tests (3 calls): 1 failure")
    groups = summarizer.llm_groups(plan, good)
    assert groups is not None and groups[0].summary.startswith("list_files (3 calls)")
    assert summarizer.llm_groups(plan, "list_files: fine") is None


@pytest.mark.parametrize("path", transcript_files(), ids=lambda p: p.stem[:48])
def test_real_runs_as_traces(summarizer, path):
    trace = [Action(**a) for a in to_actions(load(path))]
    plan = summarizer.plan(trace, TraceOptions())
    result = summarizer.finish(plan, plan.groups if plan.fired else None, "deterministic")
    if len(trace) <= plan.trigger:
        assert result.strategy == "none"
        return
    assert result.strategy in ("deterministic", "truncation")
    assert result.tokens_after < result.tokens_before
    assert {g.tool for g in result.groups} <= {a.action for a in trace}
