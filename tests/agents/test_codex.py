"""Codex CLI (``@openai/codex``) through the proxy: ``contextsynth wrap codex exec ...``
fixes a failing test in a scratch repository over 30-odd tool calls (``exec_command``,
and its free-form ``apply_patch``), against a scripted OpenAI Responses API behind the
service, streamed as Codex asks."""

from __future__ import annotations

import os
from pathlib import Path

from tests.agents import valid
from tests.agents.checks import assert_the_run_went_as_scripted, record_session, run_program
from tests.agents.harness import proxy
from tests.agents.plan import TASK, Step, make_repo
from tests.agents.player import ScriptedPlayer, Tools
from tests.agents.programs import npm_bin, wrapped
from tests.agents.script import Call
from tests.agents.upstream import ScriptedUpstream
from tests.agents.wire.responses import ResponsesWire

PACKAGE = "@openai/codex"
# A model Codex knows, so that it offers its own tools for it (apply_patch among them);
# an unknown one gets fallback metadata and a warning.
MODEL = "gpt-5.5"


def _patch(path: str, old: str, new: str) -> str:
    """An apply_patch update replacing the lines ``old`` with ``new``."""
    minus = "".join(f"-{line}\n" for line in old.splitlines())
    plus = "".join(f"+{line}\n" for line in new.splitlines())
    return f"*** Begin Patch\n*** Update File: {path}\n@@\n{minus}{plus}*** End Patch\n"


def codex_call(step: Step, repo: str) -> Call:
    def shell(command: str) -> Call:
        return Call("exec_command", {"cmd": command, "yield_time_ms": 10000})

    made = {"read": lambda: shell(f"cat {step.path}"),
            "run": lambda: shell(step.command),
            "search": lambda: shell(f"grep -rn '{step.command}' shop tests"),
            "edit": lambda: Call("apply_patch", {"input": _patch(step.path, step.old,
                                                                 step.new)}),
            "write": lambda: Call("apply_patch", {"input": _patch(
                step.path, (Path(repo) / step.path).read_text(), step.text)})}
    return made[step.kind]()


CODEX_TOOLS = Tools(working="exec_command", call=codex_call, id_prefix="call_")


def test_codex_fixes_the_repository_through_the_proxy(tmp_path: Path) -> None:
    codex = npm_bin(PACKAGE, "codex")
    repo = make_repo(tmp_path / "repo")
    home = tmp_path / "codex-home"
    home.mkdir()
    player = ScriptedPlayer(CODEX_TOOLS, str(repo))
    with ScriptedUpstream([ResponsesWire()], player) as upstream, \
            proxy(upstream.url) as service:
        env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "LANG": "C.UTF-8",
               "CODEX_HOME": str(home), "OPENAI_API_KEY": "sk-scripted"}
        # The sandbox is Codex's business, not the proxy's: off, so that it needs no
        # bubblewrap or landlock in CI's container.
        command, env = wrapped("codex", ["exec", "-m", MODEL, "--skip-git-repo-check",
                                         "--dangerously-bypass-approvals-and-sandbox", TASK],
                               service.url, env, codex)
        done = run_program(command, repo, env, player, service)
    assert done.stderr.startswith(
        f"contextsynth wrap: codex -> {service.url} (-c model_provider=contextsynth)\n")
    record_session("codex", service, "/v1/responses", repo)
    assert_the_run_went_as_scripted(repo, player, upstream, service, ("/v1/responses",),
                                    valid.responses)
