from app.engine.compaction.ledger import build_ledger, joined, recent
from app.engine.compaction.notes import render_ledger
from app.engine.reading.calls import CallSummaries
from app.engine.reading.outcomes import Outcomes
from app.engine.transcript.formats.openai import OpenAIFormat
from app.engine.transcript.model import call_results
from tests.support.build import tool_turn


def calls(*commands):
    raw = [m for i, c in enumerate(commands) for m in tool_turn(f"c{i}", "bash",
                                                                 {"command": c}, "ok")]
    return call_results(OpenAIFormat().parse({"messages": raw}).messages)


def ledger(*commands):
    return build_ledger(calls(*commands), CallSummaries(), Outcomes())


def test_a_repeat_moves_to_the_end_and_every_run_counts():
    got = ledger("cat a.py", "cat b.py", "cat a.py")
    assert list(got.files_read) == ["b.py", "a.py"]
    assert list(got.commands) == ["cat b.py", "cat a.py"]
    assert got.command_count == 3


def test_runs_joined_give_what_one_ledger_of_all_their_calls_gives():
    runs = [("cat a.py", "cat b.py"), ("echo x > c.txt", "cat a.py"), ("cat b.py",)]
    whole = ledger(*[c for run in runs for c in run])
    merged = joined([ledger(*run) for run in runs])
    for field in ("files_read", "files_written", "files_created", "commands", "urls"):
        assert list(getattr(merged, field)) == list(getattr(whole, field)), field
    assert merged.command_count == whole.command_count == 5
    assert list(merged.files_read) == ["a.py", "b.py"]
    assert list(merged.files_written) == ["c.txt"]


def test_files_the_agent_changed_are_told_apart_from_the_ones_it_created():
    got = ledger("cd /testbed && cat src/parser.py",
                 "cd /testbed && cat > fix.py << 'EOF'\nopen('src/parser.py.new', 'w')\nEOF",
                 "cd /testbed && cp src/parser.py src/parser.py.bak",
                 "cd /testbed && cp src/parser.py.new /testbed/src/parser.py",
                 "sed -i 's/a/b/' src/util.py")  # edited in place: it was there
    lines = render_ledger(got).split("\n")
    assert "- files changed: src/parser.py, src/util.py" in lines
    assert "- files created: fix.py, src/parser.py.new, src/parser.py.bak" in lines
    # a file read in one run and written in a later one was there all along
    merged = joined([ledger("cat a.py"), ledger("echo x > a.py", "echo y > b.txt")])
    assert list(merged.files_created) == ["b.txt"]


def test_recent_shows_the_newest_dozen_oldest_first():
    items = dict.fromkeys(f"f{i}.py" for i in range(15))
    shown, more = recent(items)
    assert shown == [f"f{i}.py" for i in range(3, 15)] and more == 3
    assert recent(dict.fromkeys(["x.py"])) == (["x.py"], 0)


def test_the_ledger_shows_the_newest_commands_a_line_each():
    text = render_ledger(ledger(*[f"cat f{i}.py" for i in range(9)]))
    assert "- commands run (9), latest last:\n" + "\n".join(
        f"  cat f{i}.py" for i in range(7, 9)) in text


def results(*steps):
    """(command, output) pairs as calls and their results."""
    raw = [m for i, (c, out) in enumerate(steps)
           for m in tool_turn(f"c{i}", "bash", {"command": c}, out)]
    return call_results(OpenAIFormat().parse({"messages": raw}).messages)


def test_the_last_error_is_the_newest_failure_not_fixed_since():
    failed = ("python run.py", "Traceback (most recent call last):\nValueError: bad month")
    fixed = ("python run.py", "done")
    got = build_ledger(results(failed, ("cat notes.txt", "x"), fixed), CallSummaries(),
                       Outcomes())
    assert got.last_error is None  # the same command succeeded after it failed
    other = build_ledger(results(failed, ("cat notes.txt", "x")), CallSummaries(),
                         Outcomes())
    assert other.last_error == "bash -> ValueError: bad month"


def test_an_edit_that_failed_then_succeeded_on_the_same_file_is_no_last_error():
    def edit(i, path, out):
        return tool_turn(f"e{i}", "str_replace_editor",
                         {"command": "str_replace", "path": path, "old_str": "a",
                          "new_str": "b"}, out)
    raw = [*edit(0, "src/a.py", "ERROR:\nNo replacement was performed, old_str `a` did not "
                 "appear verbatim in src/a.py."),
           *edit(1, "src/a.py", "The file src/a.py has been edited.")]
    pairs = call_results(OpenAIFormat().parse({"messages": raw}).messages)
    assert build_ledger(pairs, CallSummaries(), Outcomes()).last_error is None
    # Across runs joined, a later run's success fixes an earlier run's failure too.
    first, second = build_ledger(pairs[:1], CallSummaries(), Outcomes()), \
        build_ledger(pairs[1:], CallSummaries(), Outcomes())
    assert "did not appear verbatim" in (first.last_error or "")
    assert joined([first, second]).last_error is None
    assert joined([second, first]).last_error == first.last_error
