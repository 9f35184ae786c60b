import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.engine.reading.calls import (
    _READ_STARTS,
    _SHELL_READ,
    _SHELL_WRITE,
    _WRITE_STARTS,
    CallSummaries,
    _defined,
    _find_all,
    cut_arguments,
)
from app.engine.transcript.model import ToolCall


def summary(name, **arguments):
    return CallSummaries().of(ToolCall("c1", name, json.dumps(arguments)))


@pytest.mark.parametrize(("command", "reads", "writes"), [
    # One spelling per file: no leading ./
    ("cat ./pkg/config.py", ["pkg/config.py"], []),
    ("head -50 a/b.py && tail -n 5 run.log", ["a/b.py", "run.log"], []),
    ("sed -n '114,132p' ./pkg/config.py", ["pkg/config.py"], []),
    # A grep pattern is not a file, and a name ends where its word does.
    ('grep -B2 -A2 "logger = pkg.config.logger" ./pkg/encaps.py', ["pkg/encaps.py"], []),
    ('grep -n "debugging =" ./pkg/config.py.backup', ["pkg/config.py.backup"], []),
    ('grep -r "from pkg.config import" --include="*.py" ./pkg/tests/', [], []),
    ("cat > notes.txt << 'EOF'", [], ["notes.txt"]),
    ("sed -i 's/a/b/' src/x.py", [], ["src/x.py"]),
    ("python run.py > out.log", [], ["out.log"]),
    # cp, mv and install write their last operand; git checkout/restore what it restores
    ("cd /testbed && cp src/a.py.fixed /testbed/src/a.py && python t.py", [], ["src/a.py"]),
    ("mv new.py src/a.py; ls", [], ["src/a.py"]),
    ("cp -r a b/ && cp a.py b.py dir/", [], []),
    ("git checkout -- src/a.py", [], ["src/a.py"]),
    ("git checkout main", [], []),
    # under "cd DIR &&", a path in DIR is spelled relative to it
    ("cd /testbed/ && cat /testbed/pkg/x.py > /testbed/out.txt", ["pkg/x.py"], ["out.txt"]),
    ("cd / && cat /etc/app.conf", ["/etc/app.conf"], []),
    # SWE-agent's own commands
    ("create solve.py", [], ["solve.py"]),
    ("open chall.py 20", ["chall.py"], []),
    ("python create.py", [], []),
    ("python -c \"open('gen.py', 'w').write(code)\"", [], ["gen.py"]),
])
def test_shell_commands_name_the_files_they_read_and_write(command, reads, writes):
    found = summary("bash", command=command)
    assert list(found.reads) == reads
    assert list(found.writes) == writes
    assert found.commands == (command,)


def test_path_arguments_count_as_written_by_editing_tools():
    assert summary("str_replace_editor", path="src/app.py", old="a").writes == ("src/app.py",)
    assert summary("view_file", path="src/app.py").reads == ("src/app.py",)


def test_a_patch_names_the_files_it_changes_and_creates():
    """The apply_patch format, as Codex's free-form tool carries it and as a command."""
    patch = ("*** Begin Patch\n*** Update File: src/a.py\n@@\n-x = 1\n+x = 2\n"
             "*** Add File: src/new.py\n+y = 1\n*** Delete File: old.txt\n*** End Patch\n")
    found = summary("apply_patch", input=patch)
    assert found.writes == ("src/a.py", "src/new.py", "old.txt")
    assert found.edits == ("src/a.py", "old.txt")
    shell = summary("exec_command", cmd=f"apply_patch <<'EOF'\n{patch}EOF")
    assert set(shell.writes) == {"src/a.py", "src/new.py", "old.txt"}


def test_head_shows_the_first_arguments_shortened():
    head = summary("search_flights", origin="JFK", destination="SEA", date="2024-05-20",
                   cabin="economy").head
    assert head == 'search_flights(origin="JFK", destination="SEA", date="2024-05-20", ...)'
    assert summary("bash", command="x" * 500).head == "bash: " + "x" * 57 + "..."
    # A lone shell command reads as itself: no key, quotes or escapes; a leading cd stays
    # (a note shows it where the directory changes), its long directory shortened.
    assert summary("bash", command='cd /testbed && grep -n "_order" a.py').head \
        == 'bash: cd /testbed && grep -n "_order" a.py'
    assert summary("bash", command="cd /srv/app/backend/api && ls").head \
        == "bash: cd .../backend/api && ls"
    assert summary("get_user", user_id="omar_3817").head == 'get_user(user_id="omar_3817")'


def test_urls_in_any_argument_are_collected():
    found = summary("fetch", url="see https://example.com/docs and http://x.org/a")
    assert found.urls == ("https://example.com/docs", "http://x.org/a")


def test_cut_arguments_stay_valid_json_within_the_budget():
    arguments = json.dumps({"command": "cat <<EOF\n" + "line\n" * 400 + "EOF", "timeout": 5})
    cut = cut_arguments(f"200\0{arguments}")
    assert len(cut) <= 200
    assert json.loads(cut)["timeout"] == 5


@pytest.mark.parametrize("budget", [100, 200, 400, 600])  # the tiers' argument budgets
def test_a_lone_long_string_keeps_the_whole_budget(budget):
    command = "python - <<'EOF'\n" + "".join(f"print({i})\n" for i in range(500)) + "EOF"
    cut = cut_arguments(f"{budget}\0{json.dumps({'command': command})}")
    assert budget - 10 <= len(cut) <= budget
    kept = json.loads(cut)["command"].split("...[cut ")[0]
    # All of the budget but the JSON around the string and the cut marker (before: half).
    assert command.startswith(kept) and len(json.dumps(kept)) >= budget - 45


@given(st.lists(st.text(min_size=0, max_size=900), min_size=1, max_size=4),
       st.sampled_from([100, 200, 400, 600]))
def test_cut_arguments_fit_the_budget_and_share_it(values, budget):
    arguments = json.dumps({f"k{i}": v for i, v in enumerate(values)})
    cut = cut_arguments(f"{budget}\0{arguments}")
    value = json.loads(cut)
    assert len(cut) <= max(budget, len(arguments)) or \
        all(len(v) <= 24 + 30 for v in value.values())  # the floor per string


shell_words = st.sampled_from(["cat", "head -n 5", "tail", "nl", "less", "sed -n '1,5p'",
                               "sed -i 's/a/b/'", "grep -rn foo", "tee -a", ">", ">>", "|",
                               "&&", "a.py", "src/b.txt", "concat", "x", " ", "-", "'q r'"])


@given(st.lists(shell_words, max_size=14).map(" ".join))
def test_matching_only_where_a_command_starts_finds_what_a_full_scan_finds(line):
    assert _find_all(_SHELL_READ, line, _READ_STARTS) == _SHELL_READ.findall(line)
    assert _find_all(_SHELL_WRITE, line, _WRITE_STARTS) == _SHELL_WRITE.findall(line)


def test_long_paths_in_a_head_lose_their_middle_not_their_file_name():
    head = summary("bash", command="sed -n '572,650p' /testbed/django/db/migrations/"
                                   "operations/models.py").head
    assert head == "bash: sed -n '572,650p' .../migrations/operations/models.py"


def test_what_a_call_wrote_and_the_names_it_defines():
    heredoc = summary("bash", command="cat > repro.py << 'EOF'\ndef check_order(x):\n    pass\n"
                                      "class Probe:\n    pass\nEOF")
    assert heredoc.writes == ("repro.py",) and heredoc.defines == ("check_order", "Probe")
    script = summary("bash", command="python - <<'EOF'\nwith open('src/app/models.py', 'w') "
                                     "as f:\n    f.write(text)\nEOF")
    assert script.writes == ("src/app/models.py",)
    edit = summary("str_replace_editor", command="str_replace", path="/testbed/a.py",
                   new_str="def fixed():\n    return 1")
    assert edit.writes == ("/testbed/a.py",) and edit.defines == ("fixed",)
    assert summary("bash", command="cat repro.py").defines == ()  # reading defines nothing



_DEFINED_ANYWHERE = re.compile(r"^[ \t]*(?:async[ \t]+)?(?:def|class|function|func|fn)[ \t]+(\w+)",
                               re.MULTILINE)
_BODY_LINES = st.sampled_from(["def f(x):", "  class A:", "async def g():", "function h() {",
                               "fn main() {", "func (s *S) Run() {", "x = default", "\tdef\tz()",
                               "defined = 1", " fnord", "class", "return fn(x)", "é def ü():"])


@given(st.one_of(st.lists(_BODY_LINES, max_size=12).map("\n".join),
                 st.text(alphabet="defclasunyt _\t\n\r()é", max_size=200)))
def test_the_names_a_body_defines_are_those_a_multiline_search_finds(body: str) -> None:
    assert _defined(body) == _DEFINED_ANYWHERE.findall(body)


def test_the_code_a_call_carries_is_its_script_up_to_the_heredocs_end():
    body = "".join(f"value_{i} = compute({i})\n" for i in range(10))
    heredoc = summary("bash", command=f"cat > fix.py << 'EOF'\n{body}EOF\npython fix.py")
    assert heredoc.code == body  # not the "EOF" line, not the command after it
    dashed = summary("bash", command=f"python3 - <<-END\n{body}    END\necho done")
    assert dashed.code == body
    one_line = "python -c 'import sys; " + "print(sys.argv); " * 10 + "'"
    assert summary("bash", command=one_line).code == one_line
    written = summary("write_file", path="a.py", content=body)
    assert written.code == body
    assert summary("bash", command="ls -la src").code == ""  # short: the head shows it
    assert summary("read_file", path="a" * 200 + ".py").code == ""  # a path is no code


def test_code_a_call_runs_is_its_code_though_it_writes_no_file():
    # A notebook cell (OpenHands' execute_ipython_cell) or a JSON step's snippet: the
    # agent's own code, shown in its note like a script in a command.
    body = "".join(f"gift_givers_{i} = set(assignments_{i}.values())\n" for i in range(6))
    assert summary("execute_ipython_cell", code=body).code == body
    assert summary("python_code_action", kind="python_code_action", input_files=[],
                   code=body).code == body
    assert summary("execute_ipython_cell", code="print(1)").code == ""  # short


def test_a_long_text_is_code_only_when_the_call_writes_it():
    text = "Dear customer, " * 20
    assert summary("send_message", text=text).code == ""
    assert summary("write_file", path="notes.md", text=text).code == text


def test_a_call_carrying_search_and_replace_blocks_edits_its_file():
    # Roo Code's apply_diff: the tool's name says neither write nor edit; the blocks do.
    diff = ("<<<<<<< SEARCH\n:start_line:23\n-------\n## Plan\n* Blueprint: TBD\n=======\n"
            "## Plan\n* Blueprint: in the agent's source file, exported beside its steps\n"
            "* Context: `PromptContext` carries the query, the history and the tools\n"
            ">>>>>>> REPLACE\n\n<<<<<<< SEARCH\n:start_line:40\n-------\nold line\n=======\n"
            "new line\n>>>>>>> REPLACE")
    s = summary("apply_diff", path="docs/PRD.md", diff=diff)
    assert s.writes == ("docs/PRD.md",) and s.edits == ("docs/PRD.md",) and s.reads == ()
    # what the note shows under it: the lines it put in, not those it found nor markers
    assert s.code == ("* Blueprint: in the agent's source file, exported beside its steps\n"
                      "* Context: `PromptContext` carries the query, the history and the "
                      "tools\nnew line")
    # a diff a tool only shows (no blocks) is still a read
    assert summary("git_diff", path="docs/PRD.md").reads == ("docs/PRD.md",)


def test_argument_names_are_read_in_any_case_and_the_file_comes_first():
    # OpenCode's write: camelCase names, the content before the path, a Windows path.
    path = "C:\\Projects\\vivim-final\\docs\\atomic-v12\\phase-1\\1.1-wal-hardening.md"
    s = summary("write", content="# Unit 1.1 - SQLite WAL hardening\n" + "x" * 200,
                filePath=path)
    assert s.writes == (path,) and s.reads == ()
    # the file is named first, and a long one loses its middle, not its name
    shown = 'write(filePath="...\\\\atomic-v12\\\\phase-1\\\\1.1-wal-hardening.md"'
    assert s.head.startswith(shown)
    edited = summary("edit", filePath="src/db.ts", oldString="a", newString="b" * 150)
    assert edited.edits == ("src/db.ts",) and edited.code == "b" * 150


def test_a_real_opencode_sessions_writes_and_verdicts_are_read():
    # OpenCode's /export (issue 58): its write names the file filePath, after the content.
    from app.engine.reading.outcomes import read
    from tests.support.corpus import load_named

    messages = load_named("opencode-vivim-final-atomic-v12-setup")
    call = messages[0]["tool_calls"][0]["function"]
    s = summary(call["name"], **json.loads(call["arguments"]))
    assert s.writes and s.writes[0].endswith(".md") and s.head.startswith("write(filePath=")
    # A gate's JSON report, then the package runner's verdict on the last line.
    gate = next(m["content"] for m in load_named("opencode-vivim-final-ho1")
                if m["role"] == "tool" and m["content"].startswith("$ bun run devops")
                and m["content"].rstrip().endswith("exited with code 1"))
    assert read(gate).error and read(gate).line.startswith('error: script "devops" exited')
