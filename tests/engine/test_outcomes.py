"""A failed result's line says what failed, never just that something did."""

import pytest

from app.engine.reading.outcomes import quoted, read, short_path

TRACEBACK = """<returncode>1</returncode>
<output>
Traceback (most recent call last):
  File "/testbed/reproduce.py", line 9, in <module>
    main()
  File "/testbed/django/db/migrations/state.py", line 212, in render
    index.set_name_with_model(model)
  File "/usr/lib/python3.8/site-packages/helper.py", line 3, in check
    raise ValueError(msg)
ValueError: Indexes passed to ModelState require a name attribute. <Index: \
fields='look, _order'> doesn't have one.
</output>"""


@pytest.mark.parametrize(("text", "line"), [
    (TRACEBACK, "ValueError: Indexes passed to ModelState require a name attribute. <Index: "
                "fields='look, _order'> doesn't have one. (at .../db/migrations/state.py:212 "
                "in render)"),
    ("============ FAILURES ============\nE   assert 13 == 12\nFAILED tests/test_dates.py::"
     "test_parse - ValueError: bad month\n==== 1 failed in 0.12s ====",
     "FAILED tests/test_dates.py::test_parse - ValueError: bad month"),
    ("<returncode>2</returncode>\n<output>\ngrep: src/missing.py: No such file or directory\n"
     "</output>", "grep: src/missing.py: No such file or directory"),
    ("<returncode>1</returncode>\n<output>\n</output>", "no output, exit 1"),
    ("<returncode>127</returncode>\n<output>\nbash: pytestt: command not found\n</output>",
     "bash: pytestt: command not found"),
    ("fatal: not a git repository (or any of the parent directories): .git",
     "fatal: not a git repository (or any of the parent directories): .git"),
    # no marked line: a failed command says why at its end, not at its start
    ("<returncode>2</returncode>\n<output>\npatching file django/db/autodetector.py\n"
     "patch: **** malformed patch at line 39: @@ -665,6 +676,17 @@\n\n</output>",
     "patch: **** malformed patch at line 39: @@ -665,6 +676,17 @@"),
    ("running checks\nchecks found 2 problems\nexit code: 1", "checks found 2 problems"),
    # an exception whose name says no Error: the line that ends the traceback names it
    ("<returncode>1</returncode>\n<output>\nTraceback (most recent call last):\n"
     '  File "/testbed/django/conf/__init__.py", line 161, in __init__\n'
     '    raise ImproperlyConfigured("The SECRET_KEY setting must not be empty.")\n'
     "django.core.exceptions.ImproperlyConfigured: The SECRET_KEY setting must not be "
     "empty.\n</output>",
     "django.core.exceptions.ImproperlyConfigured: The SECRET_KEY setting must not be "
     "empty. (at .../django/conf/__init__.py:161 in __init__)"),
])
def test_the_failure_line_names_what_failed(text, line):
    outcome = read(text)
    assert outcome.error and outcome.line == line


def test_an_empty_result_flagged_as_failed_says_so():
    assert read("", flagged=True).line == "no output"


def test_successful_results_keep_their_first_line():
    outcome = read("<returncode>0</returncode>\n<output>\n3 passed in 0.2s\n</output>")
    assert not outcome.error and outcome.line == "3 passed in 0.2s"  # wrapper tags skipped


def test_a_traceback_printed_by_a_command_that_exited_0_says_its_exception():
    # A script that reports its own failure: no error, but the line a note shows is the
    # exception, not the traceback's header.
    outcome = read(TRACEBACK.replace("<returncode>1</returncode>", "<returncode>0</returncode>"))
    assert not outcome.error
    assert outcome.line.startswith("ValueError: Indexes passed to ModelState require")


CHAINED = """<returncode>1</returncode>
<output>
Traceback (most recent call last):
  File "/testbed/django/db/backends/base/operations.py", line 5, in <module>
    import sqlparse
ModuleNotFoundError: No module named 'sqlparse'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/testbed/django/db/utils.py", line 122, in load_backend
    raise ImproperlyConfigured(msg)
django.core.exceptions.ImproperlyConfigured: 'django.db.backends.dummy' isn't an \
available database backend.
</output>"""


def test_a_chained_traceback_says_the_exception_it_started_from():
    outcome = read(CHAINED)
    assert outcome.error and outcome.line == (
        "django.core.exceptions.ImproperlyConfigured: 'django.db.backends.dummy' isn't an "
        "available database backend. (at .../django/db/utils.py:122 in load_backend) "
        "(caused by ModuleNotFoundError: No module named 'sqlparse')")
    # what the result itself says: neither the frame nor the cause the engine adds
    assert quoted(outcome.line) in CHAINED
    # two tracebacks one after the other are no chain: the last says what failed
    apart = CHAINED.replace("During handling of the above exception, another exception "
                            "occurred:", "retrying")
    assert "caused by" not in read(apart).line
    assert outcome.quoted_lines() == ("ModuleNotFoundError: No module named 'sqlparse'",
                                      quoted(outcome.line))


def test_a_long_final_exception_still_names_its_cause_to_a_cut():
    # The final line takes the room the note's line has, so the line cannot name the
    # cause; a cut result keeps both lines all the same (OpenHands' runs, with
    # ImproperlyConfigured messages of 250 characters).
    long = CHAINED.replace("isn't an available database backend.",
                           "isn't an available database backend; " + "try " * 60 + ".")
    outcome = read(long)
    assert "caused by" not in outcome.line
    assert outcome.cause == "ModuleNotFoundError: No module named 'sqlparse'"
    cause, own = outcome.quoted_lines()
    assert cause == outcome.cause and cause in long
    assert own.startswith("django.core.exceptions.ImproperlyConfigured: 'django.db")
    # A cause longer than a line is not kept whole: a cut must stay within its budget.
    huge = long.replace("No module named 'sqlparse'", "No module named " + "x" * 400)
    assert read(huge).cause == "" and read(huge).quoted_lines() == (quoted(read(huge).line),)


def test_paths_are_shortened_in_the_middle_keeping_the_file_name():
    assert short_path("/testbed/django/db/migrations/state.py") == ".../db/migrations/state.py"
    assert short_path("src/app.py") == "src/app.py"


def test_a_bare_error_label_gives_the_reason_on_the_next_line():
    # The editor tool of OpenHands and SWE-agent puts the reason under "ERROR:"; the
    # label alone would tell the agent nothing about why its edit did not apply.
    text = ("ERROR:\nNo replacement was performed, old_str `return x` did not appear "
            "verbatim in /repo/src/a.py.")
    outcome = read(text, flagged=True)
    assert outcome.error
    assert outcome.line == text.splitlines()[1]
    assert read("ERROR:\n", flagged=True).line == "ERROR:"  # nothing after: the label


def test_an_exit_status_reported_after_long_output_is_read():
    # OpenHands reports the exit status after what the command printed; a test run's
    # output is often longer than the head the status is first looked for in.
    printed = "".join(f"  Applying app.{i:04d}_migration... OK\n" for i in range(120))
    failed = (f"{printed}Traceback (most recent call last):\n"
              '  File "/workspace/reproduce.py", line 9, in <module>\n'
              "    main()\n"
              "django.core.exceptions.ValidationError: ['ManagementForm data is missing']"
              "[Python Interpreter: /opt/conda/bin/python]\n"
              "root@workspace:/workspace # \n[Command finished with exit code 1]")
    assert len(failed) > 4000
    outcome = read(failed)
    assert outcome.error
    assert outcome.line.startswith("django.core.exceptions.ValidationError: ['Management")
    assert not read(failed.replace("exit code 1]", "exit code 0]")).error
    # The status at the start still decides when there is one there.
    assert not read("<returncode>0</returncode>\n" + failed).error


def test_a_long_failure_line_keeps_its_first_300_characters():
    frames = "', '".join(f"frame_{i:03d}" for i in range(60))
    line = f'ValueError: Coordinate frame name "helio" is not a known frame ([\'{frames}\'])'
    outcome = read(f"<returncode>1</returncode>\n{line}\n")
    assert len(line) > 400
    assert outcome.line.startswith(line[:300]) and outcome.line.endswith("...")


# Gemini CLI's and Qwen Code's shell tools: Qwen Code ends every result with an error
# label, "(none)" when there was none.
QWEN_OK = ("Command: git status --short\nDirectory: (root)\nOutput: M shop/pricing.py\n"
           "Error: (none)\nExit Code: 0\nSignal: 0\nProcess Group PGID: 9618")


def test_an_error_label_that_says_none_is_no_failure():
    assert read(QWEN_OK) == read(QWEN_OK.replace("Error: (none)\n", ""))
    assert not read(QWEN_OK).error
    failed = QWEN_OK.replace("Output: M shop/pricing.py",
                             "Output: ..F.\nFAILED (failures=1)")
    assert read(failed).error and read(failed).line == "FAILED (failures=1)"
    assert read("Error: (none) of the files could be read").error  # more than the label


def test_a_status_written_in_capitals_after_long_output_decides():
    # Gemini CLI's shell results end "Exit Code: N" after what the command printed, and
    # a test run's summary (pytest's warnings first) is past the head looked at first.
    printed = "".join(f"warning: the `tool.uv` field {i} is deprecated\n" for i in range(60))
    summary = ("FAILED tests/api/test_listings.py::test_by_id - assert 404 == 422\n"
               "==== 1 failed, 4 passed in 0.67s ====\n")
    failed = f"Output: {printed}{summary}Exit Code: 1\nProcess Group PGID: 73865"
    assert len(failed) > 2000
    outcome = read(failed)
    assert outcome.error
    assert outcome.line == "FAILED tests/api/test_listings.py::test_by_id - assert 404 == 422"
    # A zero is the status of a pipeline's last command: `pytest | tail` that failed
    # exits 0, and its output says so.
    piped = f"Output: collected 5 items\n{summary}Exit Code: 0\nProcess Group PGID: 73866"
    assert read(piped).error
    assert not read(piped.replace(summary, "4 passed in 0.61s\n")).error


def test_a_long_result_whose_last_line_says_it_failed_is_a_failure():
    # A package runner's verdict after a report the command printed (OpenCode's bash).
    report = "$ bun run devops/index.ts gate\n" + '{\n  "pass": false,\n' \
        + "".join(f'  "step_{i}": {{"ok": true}},\n' for i in range(120)) + "}\n"
    failed = read(report + 'error: script "devops" exited with code 1\n')
    assert failed.error and failed.line == 'error: script "devops" exited with code 1'
    assert not read(report + "done in 2.1s\n").error
