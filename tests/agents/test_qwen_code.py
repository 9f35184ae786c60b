"""Qwen Code (``@qwen-code/qwen-code``) through the proxy: ``qwen -p`` fixes a failing
test in a scratch repository over 30-odd tool calls, against a scripted OpenAI (Chat
Completions, streamed, with tools) behind ``contextsynth serve``.

It runs through ``contextsynth wrap qwen``, which sets ``OPENAI_BASE_URL`` and
``--auth-type openai``: with ``OPENAI_API_KEY`` and ``OPENAI_MODEL``, no sign-in. After
the task, Qwen Code runs a memory-extraction subagent of its own (fewer tools, no
``todo_write``): a side request.
"""

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
from tests.agents.wire.chat import ChatWire

PACKAGE = "@qwen-code/qwen-code"


def qwen_call(step: Step, repo: str) -> Call:
    """A step as one of Qwen Code's tools."""
    path = f"{repo}/{step.path}"
    made = {"read": lambda: Call("read_file", {"file_path": path}),
            "run": lambda: Call("run_shell_command", {"command": step.command,
                                                      "description": "Run a command"}),
            "search": lambda: Call("grep_search", {"pattern": step.command, "path": repo}),
            "edit": lambda: Call("edit", {"file_path": path, "old_string": step.old,
                                          "new_string": step.new}),
            "write": lambda: Call("write_file", {"file_path": path, "content": step.text})}
    return made[step.kind]()


# The main agent alone offers todo_write; its memory subagent offers the shell too.
QWEN_TOOLS = Tools(working="todo_write", call=qwen_call, id_prefix="call_")


def qwen_env(home: Path) -> dict[str, str]:
    home.mkdir(parents=True, exist_ok=True)
    return {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8",
            "OPENAI_API_KEY": "sk-scripted", "OPENAI_MODEL": "gpt-4o"}


def test_qwen_code_fixes_the_repository_through_the_proxy(tmp_path: Path) -> None:
    qwen = npm_bin(PACKAGE, "qwen")
    repo = make_repo(tmp_path / "repo")
    player = ScriptedPlayer(QWEN_TOOLS, str(repo))
    with ScriptedUpstream([ChatWire()], player) as upstream, proxy(upstream.url) as service:
        command, env = wrapped("qwen", ["-p", TASK, "--yolo"], service.url,
                               qwen_env(tmp_path / "home"), qwen)
        done = run_program(command, repo, env, player, service)
    assert done.stderr.startswith(
        f"contextsynth wrap: qwen -> {service.url} (OPENAI_BASE_URL)\n")
    assert_the_run_went_as_scripted(repo, player, upstream, service, ("/v1/chat/completions",),
                                    valid.chat)
    # Its last working request (the memory subagent's comes after it).
    record_session("qwen-code", service, "/v1/chat/completions", repo,
                   keep=lambda body: len(body.get("tools") or []) > 7)
