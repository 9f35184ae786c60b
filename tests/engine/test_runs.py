from app.corpus import load
from app.engine.compaction.base import Handles, StrategyContext
from app.engine.compaction.ledger import build_ledger
from app.engine.compaction.notes import groups
from app.engine.compaction.runs import _ENTRY_BYTES, _SUMMARY_BYTES, Runs, _identity, _prefix
from app.engine.compaction.tiers import TIER_BUDGETS, Tier
from app.engine.footprint import footprint
from app.engine.reading.calls import CallSummaries
from app.engine.reading.outcomes import Outcomes
from app.engine.transcript.formats.openai import OpenAIFormat
from app.engine.transcript.model import call_results, segment
from app.engine.transcript.sizes import size_of
from tests.support.build import tool_turn
from tests.support.corpus import load_named, transcript_files


def in_order(ledger):
    """A ledger's items in their order (dict equality would ignore it)."""
    return [list(items) for items in (ledger.files_read, ledger.files_written,
                                      ledger.commands, ledger.urls)]


def context(messages, handles=None):
    return StrategyContext(TIER_BUDGETS[Tier.MID], segment(messages), handles or Handles(),
                           CallSummaries(), Outcomes())


def work(name):
    """The assistant and tool messages of a real run after its task."""
    messages = OpenAIFormat().parse({"messages": load_named(name)}).messages
    return [m for m in messages if m.role in ("assistant", "tool")]


def test_a_run_summarized_step_by_step_equals_one_read_whole():
    run = work("minisweagent-ds-chat-dev-pydicom__pydicom-901")
    handles = Handles()
    stepwise = Runs()
    starts = [i for i, m in enumerate(run) if m.role == "assistant"]
    for stop in [*starts[1:], len(run)]:  # the run grows a step per call
        grown = stepwise.summary(run[:stop], context(run[:stop], handles))
    whole = Runs().summary(run, context(run))
    assert grown == whole
    assert in_order(grown.ledger) == in_order(whole.ledger)
    assert whole.handle == handles.of(run)
    ctx = context(run)
    built = build_ledger(call_results(run), ctx.calls, ctx.outcomes)
    assert whole.ledger == built and in_order(whole.ledger) == in_order(built)
    assert whole.ledger.commands  # the run ran commands: the comparison is not empty
    assert whole.calls == sum(len(m.tool_calls) for m in run)


def test_a_run_summarized_aged_only_ages_as_its_whole_summary_does():
    """A cold call notes most of a long transcript in the aged form alone; a warm one ages
    the whole summary it made while the block was new. Both must give the same bytes, on
    every run of the corpus (reads, writes, failures, JSON answers, repeats, replies)."""
    wire = OpenAIFormat()
    runs = 0
    for path in transcript_files():
        messages = wire.parse({"messages": load(path)}).messages
        for run in (g for g in groups(messages) if isinstance(g, list)):
            ctx = context(messages)
            whole = Runs().summary(run, ctx)
            aged = Runs().summary(run, ctx, aged=True)
            assert whole.whole and not aged.whole and aged.lines == ()
            assert (aged.brief, aged.origins, aged.handle) == \
                (whole.brief, whole.origins, whole.handle), path.name
            assert (aged.calls, aged.replies, aged.chars, aged.tools, aged.ledger) == \
                (whole.calls, whole.replies, whole.chars, whole.tools, whole.ledger)
            runs += 1
    assert runs > 100


def test_an_aged_run_summarized_whole_before_is_not_read_again():
    raw = [*tool_turn("c1", "read", {"path": "a.py"}, "print(1)"),
           *tool_turn("c2", "write", {"path": "b.py", "content": "x = 1"}, "ok")]
    run = OpenAIFormat().parse({"messages": raw}).messages
    runs = Runs()
    whole = runs.summary(run, context(run))
    assert runs.summary(run, context(run), aged=True) is whole


def test_call_ids_that_repeat_across_steps_pair_within_their_step():
    raw = [*tool_turn("c1", "bash", {"command": "pytest -q"}, "1 failed"),
           *tool_turn("c1", "bash", {"command": "pytest -q"}, "all passed")]
    run = OpenAIFormat().parse({"messages": raw}).messages
    lines = tuple(p.text for p in Runs().summary(run, context(run)).lines)
    assert lines == ('- bash: pytest -q -> 1 failed',
                     '- bash: pytest -q -> all passed')


def test_a_run_cached_inside_a_step_is_read_again_whole():
    raw = [*tool_turn("c1", "read", {"path": "a.py"}, "print(1)"),
           *tool_turn("c2", "read", {"path": "b.py"}, "print(2)")]
    run = OpenAIFormat().parse({"messages": raw}).messages
    runs = Runs()
    runs.summary(run[:3], context(run[:3]))  # ends after a call, before its result
    assert runs.summary(run, context(run)) == Runs().summary(run, context(run))


def test_the_cache_is_bounded_by_the_bytes_of_its_runs():
    runs = Runs(cache_bytes=40_000)  # half for whole runs' summaries
    newest = None
    for i in range(50):
        raw = tool_turn(f"c{i}", "bash", {"command": f"echo {i}"}, "x" * 100)
        newest = OpenAIFormat().parse({"messages": raw}).messages
        runs.summary(newest, context(newest))
    assert 0 < len(runs._runs) < 50 and runs._bytes <= 20_000
    _held_as_measured(runs)
    # The run that called last is the one kept.
    assert _prefix(tuple(hash(i) for i in map(_identity, newest)), len(newest)) in runs._runs


def test_an_entry_holds_its_summary_not_the_texts_of_its_run():
    """A run is kept under its fingerprint: a 200 KB result costs its entry the note's
    line of it, not the result (an agent's later calls only look its run up)."""
    raw = tool_turn("c1", "bash", {"command": "cat big.log"}, "y" * 200_000)
    run = OpenAIFormat().parse({"messages": raw}).messages
    runs = Runs()
    runs.summary(run, context(run))
    assert len(runs._runs) == 1 and runs._bytes < 4_000
    _held_as_measured(runs)
    assert runs.summary(run, context(run)) is next(iter(runs._runs.values()))


def _held_as_measured(runs):
    """Each entry counts what its summary holds and its fingerprints, measured whole,
    though a run that grew step by step was measured as it grew."""
    for key, summary in runs._runs.items():
        measured = size_of(summary.lines) + size_of(summary.brief) + \
            footprint(summary.origins) + footprint(summary.ledger) + footprint(summary.shown)
        assert runs._sizes[key][1] == measured + _SUMMARY_BYTES + _ENTRY_BYTES
    assert runs._bytes == sum(total for _, total, _ in runs._sizes.values())


def test_a_run_extended_step_by_step_counts_what_it_holds():
    transcript = load_named("tau-airline-gpt4o-task002-trial1")
    messages = OpenAIFormat().parse({"messages": transcript}).messages
    runs = Runs()
    for end in range(4, len(messages), 3):  # an agent's calls, a step or two more each
        for run in _runs_of(messages[:end]):
            runs.summary(run, context(messages[:end]))
    assert len(runs._runs) > 0 and runs.usage.hits > 10  # runs were carried on
    _held_as_measured(runs)


def _runs_of(messages):
    return [g for g in groups(messages) if isinstance(g, list)]


def _lines(messages):
    wire = OpenAIFormat().parse({"messages": messages}).messages
    return [p.text for p in Runs().summary(wire, context(wire)).lines]


def test_the_agents_words_sit_beside_the_calls_they_explain():
    messages = tool_turn("c1", "bash", {"command": "pytest -x"},
                         "FAILED test_parse - ValueError: bad month",
                         text="The parser fails because the month slice is off by one.")
    lines = _lines(messages)
    assert lines[0] == "- you said: The parser fails because the month slice is off by one."
    assert lines[1] == ('- bash: pytest -x -> failed: FAILED test_parse - '
                        "ValueError: bad month")


def test_a_reply_keeps_the_code_it_wrote_beside_what_it_said():
    # An agent that answers in prose (a chat assistant, Aider explaining a change) writes
    # its code in fences: that code is its own work, the names it goes on to use.
    reply = ("The window hides its list until a command is chosen. Here is the method:\n\n"
             "```ruby\ndef update_command\n  if Input.trigger?(Input::C)\n"
             "    @craft_list_window.visible = true\n  end\nend\n```\n")
    lines = _lines([{"role": "assistant", "content": reply}])
    said, *code = lines[0].split("\n")
    assert said.startswith("- you said: The window hides its list until a command")
    assert "    | def update_command" in code
    assert "    |     @craft_list_window.visible = true" in code
    # A reply without code is its gist alone.
    assert "\n" not in _lines([{"role": "assistant", "content": "Done, all tests pass."}])[0]


def test_the_same_call_with_the_same_outcome_is_one_line_with_a_count():
    messages = []
    for i in range(3):
        messages += tool_turn(f"c{i}", "bash", {"command": "python repro.py"},
                              "<returncode>1</returncode>\n<output>\nKeyError: 'month'\n</output>")
    messages += tool_turn("c9", "bash", {"command": "python repro.py"}, "ok")
    lines = _lines(messages)
    assert lines == [
        "- bash: python repro.py -> failed: KeyError: 'month'  "
        "[same again, 3 times in a row]",
        '- bash: python repro.py -> ok']


def test_a_results_salient_lines_follow_its_first_line():
    listing = "\n".join([f"replica_{i}: {1000 + i} quota ok" for i in range(20)]
                        + ["bucket_region: JE41U"] + [f"shard_{i}: {i} ok" for i in range(20)])
    line = _lines(tool_turn("c1", "describe", {"target": "prod"}, listing))[0]
    head, *more = line.split("\n")
    assert head == '- describe(target="prod") -> replica_0: 1000 quota ok'
    assert "    bucket_region: JE41U" in more


def test_a_notes_result_lines_take_a_budget_by_what_the_call_did():
    """A read's lines are what the agent works from (1,300 characters), a test run's say
    how it went (100), anything else's least (50)."""
    shapes = ("def handler_{i}(request):", "    return settle(batch_{i}, limit={i})",
              "CONFIG_{i} = '/etc/app/conf_{i}.yaml'", "    assert total_{i} == {i} * 3",
              "class Worker{i}(Base):", "    self.queue_{i}.put(job, block=True)",
              "import mod_{i}.tasks as tasks_{i}", "print(f'done {{n_{i}}} of {{m}}')",
              "    if retries_{i} > {i}: raise Timeout('x')", "@cached(ttl={i})",
              "for row_{i} in rows[{i}:]:", "    log.info('step %s', step_{i})")
    output = "\n".join(shape.format(i=i) for i in range(6) for shape in shapes)
    reads, tests, other = (_lines(tool_turn("c1", "bash", {"command": command}, output))[0]
                           for command in ("cat src/cases.py", "python -m pytest tests -q",
                                           "python report.py"))

    def under(line):
        return sum(len(x.strip()) for x in line.split("\n")[1:])
    assert 1000 < under(reads) <= 1300
    assert 50 < under(tests) <= 100
    assert 0 < under(other) <= 50


def test_a_note_says_what_the_agent_wrote():
    script = ("python - <<'EOF'\nimport re\nsource = open('src/dates.py').read()\n"
              "fixed = re.sub('s[5:7]', 's[5:7].lstrip()', source)\n"
              "with open('src/dates.py', 'w') as f:\n    f.write(fixed)\nEOF")
    messages = tool_turn("c1", "bash", {"command": script}, "")
    messages += tool_turn("c2", "write_file", {"path": "src/util.py",
                                               "content": "def parse_month(s):\n    return 1\n"},
                          "File written.")
    first, second = _lines(messages)
    assert "[wrote src/dates.py]" in first
    assert second.startswith('- write_file(path="src/util.py"') and \
        "[defines parse_month]" in second


def _summary(messages):
    wire = OpenAIFormat().parse({"messages": messages}).messages
    return Runs().summary(wire, context(wire))


def test_a_scripts_lines_worth_most_follow_its_call():
    body = "".join(f"result_{i} = settle_batch(rows, limit={i})\n" for i in range(5))
    command = f"cat > check.py << 'EOF'\nimport sys\n\n{body}EOF\npython check.py"
    line = _lines(tool_turn("c1", "bash", {"command": command}, "3 settled"))[0]
    head, *under = line.split("\n")
    assert head.startswith("- bash: cat > check.py") and head.endswith("-> 3 settled")
    assert under == [f"    | result_{i} = settle_batch(rows, limit={i})" for i in range(5)]


def test_lines_a_run_shows_already_are_not_repeated_under_a_later_call():
    script = "".join(f"probe_{i} = load_table('t_{i}')\n" for i in range(6))
    first = f"cat > a.py << 'EOF'\n{script}EOF"
    second = f"cat > b.py << 'EOF'\n{script}extra_9 = load_table('t_9')\nEOF"
    lines = _lines([*tool_turn("c1", "bash", {"command": first}, ""),
                    *tool_turn("c2", "bash", {"command": second}, "")])
    assert lines[0].count("    | probe_") == 6
    assert lines[1].split("\n")[1:] == ["    | extra_9 = load_table('t_9')"]


def test_a_repeat_folds_into_the_line_whose_lines_were_left_out():
    script = "".join(f"probe_{i} = load_table('t_{i}')\n" for i in range(6))
    messages = tool_turn("c0", "bash", {"command": f"cat > a.py << 'EOF'\n{script}EOF"}, "")
    for i in range(3):  # the same script run again and again, failing the same way
        messages += tool_turn(f"c{i + 1}", "bash",
                              {"command": f"python - << 'EOF'\n{script}EOF"}, "KeyError: 't_0'")
    lines = _lines(messages)
    assert len(lines) == 2
    assert lines[1].startswith("- bash: python - << 'EOF' probe_0 = ")
    assert lines[1].endswith("-> failed: KeyError: 't_0'  [same again, 3 times in a row]")
    assert "\n" not in lines[1]  # its script's lines are the ones shown above


def test_aged_lines_keep_changes_failures_and_reported_values():
    listing = "\n".join([f"replica_{i}: {1000 + i} quota ok" for i in range(20)]
                        + ["bucket_region: JE41U"] + [f"shard_{i}: {i} ok" for i in range(20)])
    code = "\n".join(f"def step_{i}(ctx):\n    return ctx.items[{i}]" for i in range(30))
    run = _summary([
        *tool_turn("c1", "describe", {"target": "prod"}, listing),
        *tool_turn("c2", "read_file", {"path": "src/steps.py"}, code),
        *tool_turn("c3", "set_config", {"key": "max_connections", "value": 900}, "updated"),
        *tool_turn("c4", "bash", {"command": "pytest -q"}, "FAILED test_a - ValueError: 1"),
    ])
    aged = [b.text if b is not None else None for b in run.brief]
    head, *values = aged[0].split("\n")
    assert head == '- describe(target="prod")' and "    bucket_region: JE41U" in values
    assert sum(len(v.strip()) + 1 for v in values) <= 61  # _AGED_VALUE_CHARS
    assert aged[1] is None  # a read of code: what it showed is left out once aged
    assert aged[2] == '- set_config(key="max_connections", value=900)'
    assert aged[3] == "- bash: pytest -q -> failed: FAILED test_a - ValueError: 1"


def test_an_aged_repeat_keeps_its_count_and_not_its_code():
    script = "".join(f"probe_{i} = load_table('t_{i}')\n" for i in range(6))
    messages = []
    for i in range(3):
        messages += tool_turn(f"c{i}", "bash", {"command": f"python - << 'EOF'\n{script}EOF"},
                              "KeyError: 't_0'")
    run = _summary(messages)
    assert len(run.lines) == len(run.brief) == 1
    assert "    | probe_0" in run.lines[0].text  # the whole line shows the script
    aged = run.brief[0].text
    assert aged.endswith("-> failed: KeyError: 't_0'  [same again, 3 times in a row]")
    assert "\n" not in aged


def test_a_commands_directory_shows_where_it_first_comes_in_a_note():
    steps = [("cd /testbed/src && ls", "a.py"), ("cd /testbed/src && cat a.py", "x = 1"),
             ("cd /testbed/docs && ls", "index.md"), ("cd /testbed/src && ls -la", "a.py")]
    raw = [m for i, (c, out) in enumerate(steps)
           for m in tool_turn(f"c{i}", "bash", {"command": c}, out)]
    run = OpenAIFormat().parse({"messages": raw}).messages
    heads = [p.text.split("\n")[0] for p in Runs().summary(run, context(run)).lines]
    # "ls" alone would not say which folder it listed.
    assert heads == ["- bash: cd /testbed/src && ls -> a.py", "- bash: cat a.py -> x = 1",
                     "- bash: cd /testbed/docs && ls -> index.md",
                     "- bash: cd /testbed/src && ls -la -> a.py"]


def test_a_failed_call_names_the_exception_its_chain_started_from():
    # The final exception's line fills a note's line (OpenHands' ImproperlyConfigured
    # messages run to 250 characters and more): the first exception, what to act on,
    # gets a line of its own under it, in the whole note and in the aged one.
    chained = ("Traceback (most recent call last):\n"
               '  File "/testbed/tests/runtests.py", line 12, in <module>\n'
               "AttributeError: module 'tests' has no attribute 'default_app_config'\n\n"
               "During handling of the above exception, another exception occurred:\n\n"
               "Traceback (most recent call last):\n"
               '  File "/testbed/django/apps/config.py", line 73, in _path_from_module\n'
               "django.core.exceptions.ImproperlyConfigured: The app module has multiple "
               "filesystem locations " + "('/testbed/tests', '/workspace/tests') " * 6 + "\n"
               "[Command finished with exit code 1]")
    run = _summary(tool_turn("c1", "execute_bash", {"command": "python tests/runtests.py"},
                             chained))
    cause = "    caused by: AttributeError: module 'tests' has no attribute 'default_app_config'"
    assert run.lines[0].text.split("\n")[1] == cause
    assert run.brief[0] is not None and run.brief[0].text.split("\n")[1] == cause
