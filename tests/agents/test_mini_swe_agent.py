"""mini-swe-agent (``mini-swe-agent`` on PyPI) through the proxy: ``mini`` in its
text-based mode (one fenced command a reply, results as ``<returncode>``/``<output>``
user messages, as the corpus's mini-swe-agent runs read) fixes a failing test in a
scratch repository over 30-odd steps, against a scripted OpenAI behind
``contextsynth serve``, reached through litellm, run by ``contextsynth wrap mini``
(which sets ``OPENAI_BASE_URL``, as litellm reads it)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from tests.agents import valid
from tests.agents.checks import assert_the_run_went_as_scripted, log_of, record_session
from tests.agents.harness import proxy
from tests.agents.plan import TASK, Step, make_repo
from tests.agents.programs import venv_bin, wrapped
from tests.agents.textplayer import TextActions, TextPlayer
from tests.agents.upstream import ScriptedUpstream
from tests.agents.wire.chat import ChatWire

REQUIREMENT = "mini-swe-agent"
FENCE = "mswea_bash_command"  # the fence its text-based config reads an action from
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


def mini_command(step: Step) -> str:
    """A step as one shell command, the only action mini-swe-agent has."""
    if step.kind == "read":
        return f"cat {step.path}"
    if step.kind == "search":
        return f"grep -rn '{step.command}' shop tests"
    if step.kind == "edit":
        return (f"python3 - <<'EOF'\nfrom pathlib import Path\np = Path({step.path!r})\n"
                f"p.write_text(p.read_text().replace({step.old!r}, {step.new!r}, 1))\nEOF")
    if step.kind == "write":
        return f"cat <<'EOF' > {step.path}\n{step.text.rstrip()}\nEOF"
    return step.command


def mini_reply(step: Step, number: int, repo: str) -> str:
    return (f"THOUGHT: step {number}, {step.kind} {step.path or step.command.split()[0]}."
            f"\n\n```{FENCE}\n{mini_command(step)}\n```")


MINI_ACTIONS = TextActions(write=mini_reply,
                           final=f"THOUGHT: the suite passes; submitting.\n\n```{FENCE}\n"
                                 f"{SUBMIT}\n```")


def mini_args(task: str, trajectory: Path) -> list[str]:
    """mini's switches for a non-interactive run: text-based actions, no confirmations,
    no cost limit (the scripted model has no price), and no question at the end."""
    return ["-c", "mini_textbased.yaml", "-c", "model.model_class=litellm_textbased",
            "-c", "model.model_name=openai/gpt-4o", "-c", "agent.cost_limit=0",
            "-y", "--exit-immediately", "-t", task, "-o", str(trajectory)]


def mini_env(home: Path) -> dict[str, str]:
    home.mkdir(parents=True, exist_ok=True)
    return {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8",
            "OPENAI_API_KEY": "sk-scripted", "MSWEA_CONFIGURED": "true",
            "MSWEA_COST_TRACKING": "ignore_errors",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def test_mini_swe_agent_fixes_the_repository_through_the_proxy(tmp_path: Path) -> None:
    mini = venv_bin("mini-swe-agent", REQUIREMENT, "mini")
    repo = make_repo(tmp_path / "repo")
    player = TextPlayer(MINI_ACTIONS, str(repo))
    with ScriptedUpstream([ChatWire()], player) as upstream, proxy(upstream.url) as service:
        started = time.monotonic()
        command, env = wrapped("mini", mini_args(TASK, tmp_path / "trajectory.json"),
                               service.url, mini_env(tmp_path / "home"), mini)
        done = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True,
                              timeout=300, stdin=subprocess.DEVNULL)
        took = time.monotonic() - started
    print(f"mini ran {took:.1f} s, {len(upstream.calls)} model calls\n{log_of(service)}")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.stderr.startswith(
        f"contextsynth wrap: mini -> {service.url} (OPENAI_BASE_URL)\n")
    assert_the_run_went_as_scripted(repo, player, upstream, service, ("/v1/chat/completions",),
                                    valid.chat)
    record_session("mini-swe-agent", service, "/v1/chat/completions", repo)
