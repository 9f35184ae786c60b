import pytest

from app.engine.errors import InvalidTranscript
from app.engine.jobs.caches import EngineCaches
from app.engine.jobs.trace.summarizer import Action, TraceOptions, TraceSummarizer, parse_scratchpad
from app.engine.prompts import TRACE_CLOSE, TRACE_OPEN
from app.engine.transcript.tokens import TokenCounter
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


def _line(group, outcome: str) -> str:
    """A model line that names every path and error of the group."""
    return f"{group.tool} ({group.calls} calls): {outcome}; " + ", ".join(
        [*group.paths, *group.errors])


def test_model_lines_that_keep_paths_and_errors_replace_the_deterministic_ones(summarizer):
    plan = summarizer.plan(actions(14), TraceOptions())
    reply = "\n".join(f"- {_line(g, 'checked')}" for g in plan.groups)
    groups, why = summarizer.llm_groups(plan, reply)
    assert groups is not None and why == ""
    assert [g.summary for g in groups] == [_line(g, "checked") for g in plan.groups]
    assert summarizer.llm_groups(plan, "I cannot help with that.")[0] is None


def test_a_line_missing_a_path_or_an_error_keeps_the_deterministic_line(summarizer):
    plan = summarizer.plan(actions(14), TraceOptions())
    listing, reading, testing = plan.groups
    no_error = f"list_files (3 calls): listed {', '.join(listing.paths)}"
    no_path = f"read_file (3 calls): read {reading.paths[0]}; {', '.join(reading.errors)}"
    reply = "\n".join([no_error, no_path, _line(testing, "ran")])
    groups, why = summarizer.llm_groups(plan, reply)
    assert groups is not None
    assert why.startswith("list_files: the line leaves out the error ")
    assert f"read_file: the line leaves out the path {reading.paths[1]}" in why
    assert groups[0] == listing and groups[1] == reading  # deterministic: nothing lost
    assert groups[2].summary == _line(testing, "ran")


def test_tool_names_match_exactly_and_counts_come_from_the_engine(summarizer):
    trace = [Action("read", f"notes/n{i}.txt", f"note {i} " + "x" * 300) for i in range(6)]
    trace += [Action("read_file", f"src/f{i}.py", f"code {i} " + "y" * 300) for i in range(6)]
    plan = summarizer.plan(trace, TraceOptions(trigger=3, keep=2))
    read, read_file = plan.groups
    # Only a read_file line: the read group must not take it.
    reply = f"read_file (99 calls): opened {', '.join(read_file.paths)}"
    groups, why = summarizer.llm_groups(plan, reply)
    assert why == "read: its line is missing"
    assert groups is not None and groups[0] == read
    assert groups[1].summary.startswith(f"read_file ({read_file.calls} calls): opened src/f0.py")


def test_a_line_that_keeps_no_identifier_of_its_inputs_keeps_the_deterministic_line(
        summarizer):
    ids = ["JG7FMM", "LQ940Q", "HAT028", "NM1VX1", "KC18K6"]
    trace = [Action("get_reservation_details", f'{{"reservation_id": "{i}"}}',
                    f'{{"reservation_id": "{i}", "status": "ok"}}' + " " * 400) for i in ids]
    trace += [Action("think", '{"thought": "compare the fares"}', "ok") for _ in range(3)]
    plan = summarizer.plan(trace, TraceOptions(trigger=3, keep=3))
    (reservations,) = plan.groups
    assert reservations.identifiers == tuple(ids)
    vague = "get_reservation_details (5 calls): read the reservations"
    groups, why = summarizer.llm_groups(plan, vague)
    assert groups is None
    assert why == ("get_reservation_details: the line leaves out every identifier of its "
                   "inputs (JG7FMM, LQ940Q, HAT028)")
    kept, _ = summarizer.llm_groups(plan, vague + " JG7FMM to KC18K6")
    assert kept is not None and kept[0].summary.endswith("JG7FMM to KC18K6")


def test_the_prompt_sends_the_actions_grouped_by_tool_with_their_counts(summarizer):
    plan = summarizer.plan(actions(14), TraceOptions())
    user = plan.prompt[1].content
    heads = [user.index(f"{tool} (3 calls)\nAction: {tool}")
             for tool in ("list_files", "read_file", "run_tests")]
    assert heads == sorted(heads)
    listing = user[heads[0]:heads[1]]
    assert listing.count("Action: list_files") == 3 and "Action: read_file" not in listing


def test_group_paths_are_paths_not_the_whole_input(summarizer):
    trace = [Action("bash", '{"command": "cat src/app.py && ls docs/ && curl '
                    f'https://x.test/a.html", "step": {i}}}', f"out {i}\n" + "z" * 400)
             for i in range(12)]
    plan = summarizer.plan(trace, TraceOptions())
    assert plan.groups[0].paths == ("src/app.py", "docs/")


# Runs with tool calls: a trace is a list of calls, which text-action runs do not have.
@pytest.mark.parametrize("path", [p for p in transcript_files()
                                  if any(m.get("tool_calls") for m in load(p))],
                         ids=lambda p: p.stem[:48])
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


def test_a_plan_that_fires_holds_no_copy_of_the_trace_and_counts_it_whole(summarizer, encoder):
    from app.engine.jobs.trace.summarizer import render_trace

    given = actions(30, size=2000)
    whole = render_trace(given, 10**9)
    plan = summarizer.plan(given, TraceOptions())
    # Summarizing a 15 MB trace held its rendering to the end (a copy of the body).
    assert plan.fired and plan.text == ""
    assert plan.chars_before == len(whole)
    assert plan.tokens_before == len(encoder.encode_ordinary(whole))
    assert plan.whole() == whole
    result = summarizer.finish(plan, plan.groups, "deterministic")
    assert result.tokens_before == plan.tokens_before and result.chars_before == len(whole)


def test_a_plan_that_does_not_fire_answers_with_the_trace_as_given(summarizer):
    from app.engine.jobs.trace.summarizer import render_trace

    given = actions(3)
    plan = summarizer.plan(given, TraceOptions())
    result = summarizer.finish(plan, None, "deterministic")
    assert not plan.fired and result.text == render_trace(given, 10**9) == plan.whole()
