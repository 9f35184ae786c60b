"""Agents that act in their text: actions and observations read as calls and results,
edit blocks as edits, and the wire given back as the agent sent it."""

import json

import pytest

from app.engine.compaction.lifting import CONSOLE_CALL, LIFTED_CALL, calls_made, lift
from app.engine.compaction.strategies import builtin_strategies
from app.engine.compaction.tiers import Tier
from app.engine.jobs.synthesize.synthesizer import SynthesisOptions, Synthesizer
from app.engine.reading.calls import CallSummaries, markup_head
from app.engine.reading.phases import Phase
from app.engine.reading.textactions import (
    TextActions,
    console_command,
    edit_blocks,
    is_console_output,
    is_observation,
    read_action,
    skeleton,
)
from app.engine.transcript.model import ToolCall, segment
from app.engine.transcript.tokens import TokenCounter
from tests.support.convert import to_anthropic
from tests.support.corpus import load_named
from tests.support.invariants import check_openai

EDIT = """I'll make parse() accept ISO weeks.

src/parser.py
```python
<<<<<<< SEARCH
def parse_week(text):
    return int(text)
=======
def parse_week(text):
    year, week = text.split("-W")
    return int(year), int(week)
>>>>>>> REPLACE
```
"""


@pytest.mark.parametrize(("text", "expected"), [
    ("<returncode>0</returncode>\n<output>\nok\n</output>", True),
    ("Observation: the page shows 3 results", True),
    ('{\n  "kind": "search_results_observation",\n  "query": "x"\n}', True),
    ("a.py\nb.py\n\n(Open file: n/a)\n(Current directory: /repo)\nbash-$", True),
    ("Please also keep the public API unchanged.", False),
    ("Make the ball faster.", False),
    ('{"kind": "question", "content": "What species?"}', False),
    # A failed action comes back as a step of its own kind: still the harness speaking.
    ('{\n  "kind": "action_execution_failure",\n  "error": "404 Client Error"\n}', True),
    ('{"kind": "tool_error", "message": "timeout"}', True),
    # The command echoed before its return code (mini-swe-agent in a container).
    ("<args>\n['docker', 'exec', 'c0', 'bash', '-c', 'cat <<EOF > a.py']\n</args>\n"
     "<returncode>\n0\n</returncode>\n<stdout>\n\n</stdout>", True),
    ("<args> is the tag I want the parser to accept; no return code follows", False),
    # What Aider says of the edit blocks it applied, or could not.
    ("Applied edit to src/parser.py\nCommit 1d8b4a6 aider: Accept ISO weeks", True),
    ("The LLM did not conform to the edit format.\n# 1 SEARCH/REPLACE block failed to match!",
     True),
    ("Committing src/parser.py before applying edits.\nApplied edit to src/parser.py", True),
    ("I applied the edit to the parser myself, thanks.", False),
    # Aider asks before it runs the shell commands a reply suggested, then runs them.
    ("Run shell commands? (Y)es/(N)o/(D)on't ask again [Yes]: y\nRunning ./clean.sh\nok",
     True),
    ("Run the shell commands again, please.", False),
    # What Aider sends the model of a command it ran, and of the tests it ran itself.
    ("Output from git status --short\n M shop/pricing.py\n", True),
    ("I ran this command:\n\npython3 -m unittest\n\nAnd got this output:\n\nOK", True),
    ("Output from the server looks wrong to me.", False),
])
def test_an_observation_is_known_by_the_shape_a_harness_gives_it(text, expected):
    assert is_observation(text) is expected


def test_actions_are_read_from_a_fence_an_action_line_or_a_json_step():
    fenced = read_action("THOUGHT: list the files.\n\n```bash\nls -la src\n```")
    assert (fenced.name, json.loads(fenced.arguments), fenced.thought) == \
        ("bash", {"command": "ls -la src"}, "THOUGHT: list the files.")
    line = read_action("Thought: search first.\nAction: Type [5]; ISO week parsing")
    assert line.name == "type" and line.thought == "Thought: search first."
    step = read_action('{"kind": "search_action", "query": "iso week"}')
    assert step.name == "search_action" and json.loads(step.arguments)["query"] == "iso week"


def test_a_fence_named_with_a_shells_word_is_a_shell_command():
    # mini-swe-agent's version 2 text mode fences its command so, where version 1 wrote
    # bash; any harness's name of that shape reads the same, and a word that only holds
    # a shell's letters does not.
    for language in ("mswea_bash_command", "bash-session", "agent_sh", "zsh_run"):
        action = read_action(f"THOUGHT: run the tests.\n\n```{language}\npytest -q\n```")
        assert (action.name, json.loads(action.arguments)) == ("bash", {"command": "pytest -q"})
    assert read_action("```bashful\nprint(1)\n```").name == "bashful"


def test_edit_blocks_are_edits_of_their_files():
    edits, thought = edit_blocks(EDIT)
    [edit] = edits
    args = json.loads(edit.arguments)
    assert edit.name == "edit" and args["path"] == "src/parser.py"
    assert "year, week = text.split" in args["new_str"] and "<<<<" not in thought
    assert thought == "I'll make parse() accept ISO weeks."
    assert edit_blocks("No edits here.") == ([], "No edits here.")


def mini_swe_run(steps):
    messages = [{"role": "system", "content": "Act with one bash block per reply."},
                {"role": "user", "content": "Fix the crash in src/parser.py."}]
    for i in range(steps):
        messages += [
            {"role": "assistant",
             "content": f"THOUGHT: step {i}.\n\n```bash\ncat src/m{i}.py\n```"},
            {"role": "user", "content": "<returncode>0</returncode>\n<output>\n"
             + "\n".join(f"def helper_{i}_{j}(): return {j}" for j in range(60)) + "\n</output>"},
        ]
    return messages


@pytest.fixture
def synthesizer(encoder):
    return Synthesizer(TokenCounter(encoder), builtin_strategies())


def test_a_text_action_run_is_compacted_and_comes_back_in_its_own_shape(synthesizer, formats):
    messages = mini_swe_run(30)
    wire = formats["openai"]
    result = synthesizer.run(wire.parse({"messages": messages}), SynthesisOptions())
    out = wire.render(result.transcript)["messages"]
    assert result.compacted and result.tokens_after < result.tokens_before / 2
    check_openai(messages, out)
    # No call reaches the wire: the agent never used a tools API.
    assert not any(m.get("tool_calls") or m["role"] == "tool" for m in out)
    assert LIFTED_CALL not in json.dumps(out)
    # Older steps became notes naming their commands; the task is kept.
    notes = [m["content"] for m in out if m["content"].startswith("[contextsynth]")]
    assert any("cat src/m0.py" in n for n in notes)
    assert out[1] == messages[1]
    # Recent actions come back as the agent wrote them.
    assert messages[-2] in out
    assert result.phase is not Phase.ORIENT  # it has been working all along


def test_edit_blocks_are_writes_and_leave_nothing_made_on_the_wire(synthesizer, formats):
    messages = [{"role": "user", "content": "Accept ISO weeks in parse_week."}]
    body = "\n".join(f"    check_{j} = validate(text, {j})" for j in range(150))
    for i in range(12):
        edit = EDIT.replace("parse_week", f"week_{i}").replace(
            "    year, week", f"{body}\n    year, week")
        messages += [{"role": "assistant", "content": edit},
                     {"role": "user", "content": f"Now do the same for week_{i + 1}."}]
    wire = formats["openai"]
    parsed = wire.parse({"messages": messages})
    lifted = lift(parsed.messages)
    assert len(lifted.messages) == len(messages) + 12  # a made result per edit
    result = synthesizer.run(parsed, SynthesisOptions(tier=Tier.LOCAL))
    out = wire.render(result.transcript)["messages"]
    check_openai(messages, out)
    assert not any(m.get("tool_calls") or m["role"] == "tool" for m in out)
    # Every user message stays; the older edits are notes naming the file and the code.
    assert [m for m in out if m["role"] == "user" and not m["content"].startswith("[")] == \
        [m for m in messages if m["role"] == "user"]
    notes = "\n".join(m["content"] for m in out if m["content"].startswith("[contextsynth]"))
    assert "edit(path=\"src/parser.py\"" in notes and "def week_0(text):" in notes
    assert result.stable <= len(out) and result.steady <= len(out)
    # Its edits say where it is: producing, not "orient, no tool has run yet"; the user's
    # next instruction opens the work again.
    assert result.phase is Phase.GATHER and result.signals.edited == ()
    mid_edit = synthesizer.run(wire.parse({"messages": messages[:-1]}), SynthesisOptions())
    assert mid_edit.phase is Phase.PRODUCE and mid_edit.signals.edited == ("src/parser.py",)


@pytest.mark.parametrize(("text", "expected"), [
    ("/run python test.py craft", ("bash", {"command": "python test.py craft"})),
    ("/test pytest -q tests", ("bash", {"command": "pytest -q tests"})),
    ("/git push -u origin main", ("bash", {"command": "git push -u origin main"})),
    ("/ls", ("ls", {"argument": ""})),
    ("/add src/a.py src/b.py", ("add", {"argument": "src/a.py src/b.py"})),
    ("run the tests please", None),
    ("/run pytest\nand then fix what fails", None),  # a request that starts with one
])
def test_a_console_command_is_a_call(text, expected):
    found = console_command(text)
    assert (found.name, json.loads(found.arguments)) == expected if expected else found is None


@pytest.mark.parametrize(("text", "expected"), [
    ("============ test session starts ============\ncollected 25 items", True),
    ("Added src/a.py to the chat", True),
    ("Removed: 6b07fb7 Increased the z value.\nHEAD is: 84970eb", True),
    ("Commit 585da44 Loaded game_craft.rb in test_craft.rb.", True),
    # A request the user typed next is theirs, not the command's output.
    ("please effect the changes to the one at the root", False),
    ("/undo", False),
])
def test_a_console_output_is_known_by_its_shape(text, expected):
    assert is_console_output(text) is expected


def aider_session(rounds):
    """An Aider chat: requests, edit blocks and their reports, and test runs the user
    asks for at the console, all in user and assistant text."""
    messages = [{"role": "system", "content": "Act as an expert developer. Use edit blocks."},
                {"role": "user", "content": "Make parse_week accept ISO weeks."}]
    for i in range(rounds):
        messages += [
            {"role": "assistant", "content": EDIT.replace("parse_week", f"week_{i}")},
            {"role": "user", "content": f"Applied edit to src/parser.py\nCommit {i:07x} "
             f"aider: week_{i} accepts ISO weeks"},
            {"role": "user", "content": "/run pytest -q"},
            {"role": "user", "content": "\n".join(
                [f"tests/test_parser.py::test_week_{j} PASSED" for j in range(40)]
                + [f"FAILED tests/test_parser.py::test_week_{i} - ValueError: bad week {i}"])},
            {"role": "user", "content": f"Fix the failure in week_{i}, keep the API."},
        ]
    return messages


def test_console_commands_and_edit_reports_are_calls_and_results(synthesizer, formats):
    messages = aider_session(16)
    wire = formats["openai"]
    parsed = wire.parse({"messages": messages})
    lifted = lift(parsed.messages)
    typed = [m for m in lifted.messages if m.tool_calls
             and m.tool_calls[0].id.startswith(CONSOLE_CALL)]
    assert len(typed) == 16
    assert json.loads(typed[0].tool_calls[0].arguments) == {"command": "pytest -q"}
    # The edit's report is its result; no result is made for it.
    assert len(lifted.messages) == len(messages)
    # The console's calls are not the model's: 16 model calls made, and the one to come.
    turns = segment(lifted.messages).turns
    assert calls_made(lifted.messages, turns)[-1] == 16
    result = synthesizer.run(parsed, SynthesisOptions())
    out = wire.render(result.transcript)["messages"]
    assert result.compacted and result.tokens_after < result.tokens_before * 2 / 3
    check_openai(messages, out)
    assert not any(m.get("tool_calls") or m["role"] == "tool" for m in out)
    assert LIFTED_CALL not in json.dumps(out) and CONSOLE_CALL not in json.dumps(out)
    # The user's requests stay as they were; what the console printed went into notes,
    # which name the command and keep its failure line.
    requests = [m for m in messages if m["content"].startswith("Fix the failure")]
    assert all(r in out for r in requests)
    notes = "\n".join(m["content"] for m in out if m["content"].startswith("[contextsynth]"))
    assert "pytest -q" in notes and "ValueError: bad week 0" in notes
    assert "test_week_3 PASSED" not in notes


def test_a_report_joined_with_the_users_next_words_stays_the_users(synthesizer, formats):
    # Anthropic joins neighbouring user messages: the edit's report, the console command,
    # its output and the user's next request arrive as one user turn. Its texts are not
    # all a harness's output, so none of it is read as a result, and the request stays.
    payload = to_anthropic(aider_session(16))
    wire = formats["anthropic"]
    result = synthesizer.run(wire.parse(payload), SynthesisOptions())
    sent = json.dumps(wire.render(result.transcript))
    assert all(f"Fix the failure in week_{i}, keep the API." in sent for i in range(16))


# Agents of shapes never listed here: markup actions, and the result shape a run's own
# harness repeats (Cline, Roo Code and Kilo Code write theirs so).
MARKUP = """<thinking>The parser is in src/parser.py.</thinking>
<read_file>
<path>src/parser.py</path>
</read_file>"""


def test_an_action_written_as_markup_is_a_call_named_by_its_tag():
    action = read_action(MARKUP)
    assert action.name == "read_file"
    assert json.loads(action.arguments) == {"path": "src/parser.py"}
    assert "The parser is in src/parser.py." in action.thought
    # The file a markup action writes may hold fenced code: the markup is the action.
    written = read_action("<write_to_file>\n<path>README.md</path>\n<content>\n# Use\n"
                          "```bash\npip install x\n```\n</content>\n</write_to_file>")
    assert written.name == "write_to_file"
    assert json.loads(written.arguments)["path"] == "README.md"
    assert "pip install x" in json.loads(written.arguments)["content"]
    # Markup shown in fenced code is not an action.
    assert read_action("Use it so:\n```xml\n<read_file>\n<path>a</path>\n</read_file>\n```\n"
                       "```bash\nls\n```").name == "bash"
    # Markup without parameters (a thought) is no action; a fence in the text still is.
    assert read_action("<thinking>hmm</thinking>\n```bash\nls\n```").name == "bash"


@pytest.mark.parametrize(("first", "second", "same"), [
    ("[read_file for 'a.py'] Result:", "[search_files for 'x' in '*.ts'] Result:", True),
    ("[read_file for 'a.py'] Result:", "[ERROR] You did not use a tool in your previous "
     "response! Please retry with a tool use.", False),
])
def test_a_harness_opens_its_results_with_one_skeleton(first, second, same):
    assert skeleton(first) is not None
    assert (skeleton(first) == skeleton(second)) is same


@pytest.mark.parametrize("words", ["Yes, thanks.", "Please keep the API unchanged.",
                                   "I want to cancel reservation JG7FMM"])
def test_what_people_write_has_no_harness_skeleton(words):
    assert skeleton(words) is None


def _xml_run(steps: int, answer: str | None = None) -> list[dict]:
    env = ("<environment_details>\n# Current Time\n9:{:02d} AM\n# Current Mode\nACT MODE\n"
           "</environment_details>")
    messages: list[dict] = [{"role": "system", "content": "You are an engineer."},
                            {"role": "user", "content": "Fix the parser.\n" + env.format(0)}]
    for i in range(steps):
        messages.append({"role": "assistant", "content":
                         f"<read_file>\n<path>src/m{i}.py</path>\n</read_file>"})
        messages.append({"role": "user", "content":
                         f"[read_file for 'src/m{i}.py'] Result:\n" +
                         "\n".join(f"def f{i}_{k}(): return {k}" for k in range(30)) +
                         "\n" + env.format(i + 1)})
    if answer is not None:
        messages.append({"role": "assistant", "content": "<ask_followup_question>\n<question>"
                         "Which date format?</question>\n</ask_followup_question>"})
        messages.append({"role": "user", "content": f"[ask_followup_question for 'Which date "
                         f"format?'] Result:\n<answer>\n{answer}\n</answer>"})
    return messages


def test_a_runs_own_result_shape_is_learned_and_its_boilerplate_kept_once(formats):
    messages = _xml_run(6, answer="ISO 8601, and never change the public API.")
    parsed = formats["openai"].parse({"messages": messages}).messages
    lifted = lift(parsed)
    results = [m for m in lifted.messages if m.role == "tool"]
    assert len(results) == 6
    # The environment block every result repeats stays in the newest result only.
    assert [("<environment_details>" in m.text) for m in results] == [False] * 5 + [True]
    assert "def f0_29(): return 29" in results[0].text
    # The user's answer to the agent's question is the user's, not a result.
    assert lifted.messages[-1].role == "user" and "ISO 8601" in lifted.messages[-1].text


def test_a_warm_lift_reads_no_block_again_however_large_the_blocks(formats):
    """A harness that lists the project's files in every result (Roo Code's environment
    details): the blocks of a run outgrow what their memo holds, and a call that lifts
    the run again must still find what it read (which tags each text holds, whether each
    block repeats the one before, each text without its stale blocks), not read every
    block's lines again: that had been most of a warm call on such runs."""
    files = "\n".join(f"src/pkg/module_{k:03d}.py" for k in range(200))
    env = "<environment_details>\n# Current Time\n9:{:02d} AM\n" + files + \
        "\n</environment_details>"
    messages = _xml_run(24)
    for i, m in enumerate(messages[1:], 1):
        if m["role"] == "user":
            m["content"] = m["content"].rsplit("<environment_details>", 1)[0] + env.format(i)
    parsed = formats["openai"].parse({"messages": messages}).messages
    actions = TextActions(cache_bytes=1 << 20)
    cold = lift(parsed, actions)
    assert [("module_199" in m.text) for m in cold.messages if m.role == "tool"] == \
        [False] * 23 + [True]
    missed = actions.usage.misses
    again = lift(formats["openai"].parse({"messages": messages}).messages, actions)
    assert actions.usage.misses == missed
    assert [m.text for m in again.messages] == [m.text for m in cold.messages]


def test_the_harness_block_on_the_users_answer_goes_where_a_newer_message_shows_it(
        synthesizer, formats):
    """The harness appends its environment block to the user's answer as to every
    result: a newer result shows it again, so the answer keeps only the user's words.
    The newest message holding the block keeps it."""
    env = ("<environment_details>\n# Current Time\n10:{:02d} AM\n# Open Tabs\nsrc/a.py\n"
           "src/b.py\n</environment_details>")
    answer = ("[ask_followup_question for 'Which date format?'] Result:\n<answer>\n"
              "ISO 8601, and never change the public API.\n</answer>\n")
    messages = _xml_run(6)
    messages[6:6] = [{"role": "assistant", "content": "<ask_followup_question>\n<question>"
                      "Which date format?</question>\n</ask_followup_question>"},
                     {"role": "user", "content": answer + env.format(30)}]
    wire = formats["openai"]
    lifted = lift(wire.parse({"messages": messages}).messages)
    users = [m for m in lifted.messages if m.role == "user"]
    kept = next(m for m in users if "ISO 8601" in m.text)
    assert kept.text == answer.rstrip()
    assert "<environment_details>" in lifted.messages[-1].text  # the newest result
    out = wire.render(synthesizer.run(wire.parse({"messages": messages}),
                                      SynthesisOptions()).transcript)["messages"]
    check_openai(messages, out)
    assert answer.rstrip() in [m["content"] for m in out]
    # The answer as the newest message: nothing newer shows the block, so it stays.
    last = _xml_run(6, answer="ISO 8601.")
    last[-1]["content"] += "\n" + env.format(31)
    lifted = lift(wire.parse({"messages": last}).messages)
    assert lifted.messages[-1].text == last[-1]["content"]


def test_a_chat_whose_replies_repeat_no_harness_shape_is_left_to_the_user(formats):
    messages: list[dict] = [{"role": "user", "content": "Help me plan a trip."}]
    for i in range(6):
        messages.append({"role": "assistant", "content": f"Option {i}: a city break?"})
        messages.append({"role": "user", "content": "Yes, thanks. What about [museums]?"})
    parsed = formats["openai"].parse({"messages": messages}).messages
    assert lift(parsed).messages == tuple(parsed)


def test_a_real_xml_tool_run_is_read_as_calls_with_its_phase(synthesizer, formats):
    messages = load_named("cline-praxis-os-2025-10-11-1142")
    wire = formats["openai"]
    parsed = wire.parse({"messages": messages})
    lifted = lift(parsed.messages)
    calls = [c.name for m in lifted.messages for c in m.tool_calls]
    assert {"read_file", "search_files", "replace_in_file"} <= set(calls)
    assert len(calls) >= 40
    result = synthesizer.run(parsed, SynthesisOptions())
    assert result.phase is not Phase.ORIENT
    out = wire.render(result.transcript)["messages"]
    check_openai(messages, out)
    # The environment block every result repeated is gone from the older results kept.
    def blocks(messages: list[dict]) -> int:
        return sum("<environment_details>" in m["content"] for m in messages
                   if m["role"] == "user" and isinstance(m["content"], str))

    assert blocks(messages) >= 40 and blocks(out) < blocks(messages) / 3


def test_notes_show_an_action_written_as_markup_in_markup(synthesizer, formats):
    # A real Roo Code run: its older actions are notes, each as the agent wrote it, so
    # the notes read as its own actions in its own notation.
    messages = load_named("roo-code-art-2025-04-29-0116")
    wire = formats["openai"]
    out = wire.render(synthesizer.run(wire.parse({"messages": messages}),
                                      SynthesisOptions()).transcript)["messages"]
    notes = "\n".join(m["content"] for m in out if isinstance(m["content"], str)
                      and m["content"].startswith("[contextsynth] "))
    assert '- <apply_diff><path>ART-Prompt-Management-Refactor-PRD.md</path><diff>' in notes
    assert "apply_diff(" not in notes
    # A call made on the wire with the same name keeps the call's own notation.
    call = ToolCall("c1", "read_file", json.dumps({"path": "src/a.ts"}))
    assert markup_head(call.name, call.arguments) == "<read_file><path>src/a.ts</path></read_file>"
    assert CallSummaries().of(call).head == 'read_file(path="src/a.ts")'
