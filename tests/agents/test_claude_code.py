"""Claude Code (``@anthropic-ai/claude-code``) through the proxy: ``contextsynth wrap
claude -p ...`` fixes a failing test in a scratch repository over 30-odd tool calls,
against a scripted Anthropic behind the service."""

from __future__ import annotations

import json
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
from tests.agents.wire.anthropic import AnthropicWire

PACKAGE = "@anthropic-ai/claude-code"
TOOLS = ("Bash", "Read", "Edit", "Write")
# Claude Code's switches for what it would otherwise fetch from the network.
QUIET = {"DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1",
         "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_BUG_COMMAND": "1"}


def claude_call(step: Step, repo: str) -> Call:
    """A step as one of Claude Code's tools (absolute paths, as its tools ask)."""
    path = f"{repo}/{step.path}"
    made = {"read": lambda: Call("Read", {"file_path": path}),
            "run": lambda: Call("Bash", {"command": step.command,
                                         "description": "Run a command"}),
            "search": lambda: Call("Bash", {"command": f"grep -rn '{step.command}' shop tests",
                                            "description": "Search the code"}),
            "edit": lambda: Call("Edit", {"file_path": path, "old_string": step.old,
                                          "new_string": step.new}),
            "write": lambda: Call("Write", {"file_path": path, "content": step.text})}
    return made[step.kind]()


CLAUDE_TOOLS = Tools(working="Bash", call=claude_call, id_prefix="toolu_")


def test_claude_code_fixes_the_repository_through_the_proxy(tmp_path: Path) -> None:
    claude = npm_bin(PACKAGE, "claude")
    repo = make_repo(tmp_path / "repo")
    home = tmp_path / "home"
    home.mkdir()
    player = ScriptedPlayer(CLAUDE_TOOLS, str(repo))
    with ScriptedUpstream([AnthropicWire()], player) as upstream, \
            proxy(upstream.url) as service:
        env = {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8",
               "ANTHROPIC_API_KEY": "sk-ant-scripted", **QUIET}
        command, env = wrapped("claude", ["-p", TASK, "--output-format", "json",
                                          "--allowedTools", ",".join(TOOLS)],
                               service.url, env, claude)
        done = run_program(command, repo, env, player, service)
    # contextsynth wrap set the base URL, and said so in one line.
    assert done.stderr.startswith(
        f"contextsynth wrap: claude -> {service.url} (ANTHROPIC_BASE_URL)\n")
    result = json.loads(done.stdout)
    assert result["is_error"] is False, result
    record_session("claude-code", service, "/v1/messages", repo)
    assert_the_run_went_as_scripted(repo, player, upstream, service, ("/v1/messages",),
                                    valid.anthropic)
