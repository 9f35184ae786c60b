"""Aider (``aider-chat`` on PyPI) through the proxy: a chat in the terminal, in which
the scripted model fixes a failing test in a scratch repository over 30-odd requests,
against a scripted OpenAI behind ``contextsynth serve``.

Aider's model acts in its text: it names a file to have Aider add it to the chat, puts a
command in a ```bash block for Aider to run, and edits with SEARCH/REPLACE blocks,
after which Aider runs the tests itself (``--auto-test``) and sends a failure back.
Aider asks before it adds a file, runs a command or sends a failure back; ``--yes-always``
answers yes to all but the commands, so the test answers as a person at the terminal
would: yes to every question, and "Go on." at each prompt until the model is done.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from pathlib import Path

from tests.agents import valid
from tests.agents.checks import assert_the_run_went_as_scripted, log_of, record_session
from tests.agents.harness import proxy
from tests.agents.plan import TASK, Step, make_repo
from tests.agents.programs import venv_bin, wrapped
from tests.agents.script import Seen
from tests.agents.textplayer import TextActions, TextPlayer
from tests.agents.upstream import ScriptedUpstream
from tests.agents.wire.chat import ChatWire

REQUIREMENT = "aider-chat"
TEST_RUN = "python3 -m unittest discover -s tests -t ."
FENCE = "`" * 3


# The files the model has Aider add to the chat (those it edits, and what it reads
# about them); the other modules it only looks at with cat.
CHAT_FILES = ("README.md", "tests/test_pricing.py", "shop/pricing.py", "CHANGELOG.md")


def aider_reply(step: Step, number: int, repo: str) -> str:
    """A step as Aider's model takes it. A reply must name no file that is not in the
    chat yet unless it asks for one: Aider adds a named file and asks again before it
    applies an edit or runs a command of the same reply."""
    if step.kind == "read" and step.path in CHAT_FILES:
        return f"Step {number}: I need to see {step.path} to go on."
    if step.kind == "read":  # a look, not a file to edit: its text stays in the history
        step = Step("run", command=f"cat ./{step.path}")  # ./: not a name Aider adds
    if step.kind in ("run", "search"):
        command = step.command if step.kind == "run" else \
            f"grep -rn '{step.command}' shop tests"
        return f"Step {number}: run this.\n\n{FENCE}bash\n{command}\n{FENCE}\n"
    old, new = step.old, step.new
    if step.kind == "write":  # the whole file, as it is now, replaced
        old, new = (Path(repo) / step.path).read_text().rstrip("\n"), step.text.rstrip("\n")
    return (f"Step {number}: change it.\n\n{step.path}\n{FENCE}python\n<<<<<<< SEARCH\n{old}\n"
            f"=======\n{new}\n>>>>>>> REPLACE\n{FENCE}\n")


def aider_side(seen: Seen) -> bool:
    """A commit message or a summary of the chat: the edit-block rules are not in it."""
    return "SEARCH/REPLACE" not in seen.system


AIDER_ACTIONS = TextActions(write=aider_reply, side=aider_side, whole=True)


def aider_args() -> list[str]:
    """Aider quiet (the base URL is contextsynth wrap's): no update check, no
    analytics, no colours, plain input, no commits of its own (the plan reads
    ``git diff``), and the tests run after each edit."""
    return ["--model", "openai/gpt-4o", "--openai-api-key", "sk-scripted",
            "--edit-format", "diff",
            "--no-check-update", "--analytics-disable", "--no-show-release-notes",
            "--no-show-model-warnings", "--no-pretty", "--no-fancy-input", "--no-auto-commits",
            "--no-dirty-commits", "--no-gitignore", "--no-auto-lint", "--auto-test",
            "--test-cmd", TEST_RUN]


def converse(process: subprocess.Popen[bytes], player: TextPlayer, deadline: float) -> str:
    """Be the person at Aider's prompt: yes to each question, the task at the first
    prompt, then "Go on." until the model is done, then end the input. Returns what
    Aider printed."""
    assert process.stdin is not None and process.stdout is not None
    out, said = b"", 0
    task_given = False
    while process.poll() is None:
        if time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"aider did not finish:\n{out.decode()[-3000:]}")
        ready, _, _ = select.select([process.stdout], [], [], 1.0)
        if not ready:
            continue
        chunk = os.read(process.stdout.fileno(), 65536)
        if not chunk:
            break
        out += chunk
        tail = out[said:].rstrip(b" ")
        if tail.endswith(b"]:"):  # a question: (Y)es/(N)o ... [Yes]:
            answer = b"y\n"
        elif tail.endswith(b">"):  # the prompt: diff>
            if player.script.done:
                process.stdin.close()
                said = len(out)
                continue
            answer = b"Go on.\n" if task_given else TASK.encode() + b"\n"
            task_given = True
        else:
            continue
        said = len(out)
        process.stdin.write(answer)
        process.stdin.flush()
    process.wait(timeout=30)
    return out.decode(errors="replace")


def test_aider_fixes_the_repository_through_the_proxy(tmp_path: Path) -> None:
    aider = venv_bin("aider", REQUIREMENT, "aider")
    repo = make_repo(tmp_path / "repo")
    home = tmp_path / "home"
    home.mkdir()
    player = TextPlayer(AIDER_ACTIONS, str(repo))
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8",
           "TERM": "dumb", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    with ScriptedUpstream([ChatWire()], player) as upstream, proxy(upstream.url) as service:
        started = time.monotonic()
        command, env = wrapped("aider", aider_args(), service.url, env, aider)
        process = subprocess.Popen(command, cwd=repo, env=env, stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        printed = converse(process, player, started + 300)
        took = time.monotonic() - started
    print(f"aider ran {took:.1f} s, {len(upstream.calls)} model calls\n{log_of(service)}")
    assert process.returncode == 0, printed[-3000:]
    assert "Applied edit to shop/pricing.py" in printed
    assert f"contextsynth wrap: aider -> {service.url} (OPENAI_API_BASE)\n" in printed
    assert_the_run_went_as_scripted(repo, player, upstream, service, ("/v1/chat/completions",),
                                    valid.chat)
    record_session("aider", service, "/v1/chat/completions", repo,
                   keep=lambda body: "SEARCH/REPLACE" in json.dumps(body["messages"][0]))
