"""Gemini CLI (``@google/gemini-cli``) through the proxy: ``gemini -p`` fixes a failing
test in a scratch repository over 30-odd tool calls, against a scripted Gemini behind
``contextsynth serve``.

It runs through ``contextsynth wrap gemini``, which sets ``GOOGLE_GEMINI_BASE_URL`` and
a system settings file choosing the ``gemini-api-key`` sign-in (the base URL alone makes
Gemini CLI choose its "gateway" sign-in, which ``-p`` refuses: "Invalid auth method
selected"). Gemini CLI skips that file when a folder above it is writable by others, as
the test's home under /tmp is, so the user settings here choose that sign-in too, as
the recipe in docs/agents.md says to.
Once the proxy has cut something, the scripted model calls the expand tool once, inside
a streamed answer: the proxy answers it, and Gemini CLI never sees the call.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from tests.agents import valid
from tests.agents.checks import assert_the_run_went_as_scripted, log_of, record_session
from tests.agents.harness import proxy
from tests.agents.plan import TASK, Step, make_repo
from tests.agents.player import ScriptedPlayer, Tools
from tests.agents.programs import npm_bin, wrapped
from tests.agents.script import EXPAND_TOOL, Call
from tests.agents.upstream import ScriptedUpstream
from tests.agents.wire.gemini import GeminiWire, calls_of

PACKAGE = "@google/gemini-cli"
MODEL = "gemini-2.5-pro"
# The sign-in a key and a base URL need, and no traffic of its own (updates, usage).
SETTINGS = {"security": {"auth": {"selectedType": "gemini-api-key"},
                         "folderTrust": {"enabled": False}},
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False}}
# One process, not two: the CLI otherwise starts itself again with a bigger heap.
QUIET = {"GEMINI_CLI_NO_RELAUNCH": "true"}


def gemini_call(step: Step, repo: str) -> Call:
    """A step as one of Gemini CLI's tools. Its shell sets git's ``diff.external`` to ""
    (to keep the model from running programs through git), which the git here takes
    for a program to run: a diff asks for git's own."""
    path = f"{repo}/{step.path}"
    command = step.command.replace("git diff", "git diff --no-ext-diff")
    made = {"read": lambda: Call("read_file", {"file_path": path}),
            "run": lambda: Call("run_shell_command", {"command": command,
                                                      "description": "Run a command"}),
            "search": lambda: Call("grep_search", {"pattern": step.command, "dir_path": repo}),
            "edit": lambda: Call("replace", {"file_path": path, "old_string": step.old,
                                             "new_string": step.new,
                                             "instruction": "Fix the discount."}),
            "write": lambda: Call("write_file", {"file_path": path, "content": step.text})}
    return made[step.kind]()


GEMINI_TOOLS = Tools(working="run_shell_command", call=gemini_call, id_prefix="gc_")


def gemini_env(home: Path) -> dict[str, str]:
    """Gemini CLI's environment but for the base URL: a key, a home with settings."""
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(SETTINGS))
    return {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8",
            "GEMINI_API_KEY": "gemini-scripted-key", **QUIET}


def test_gemini_cli_fixes_the_repository_through_the_proxy(tmp_path: Path) -> None:
    gemini = npm_bin(PACKAGE, "gemini")
    repo = make_repo(tmp_path / "repo")
    player = ScriptedPlayer(GEMINI_TOOLS, str(repo))
    with ScriptedUpstream([GeminiWire()], player) as upstream, \
            proxy(upstream.url) as service:
        started = time.monotonic()
        command, env = wrapped("gemini", ["-p", TASK, "--model", MODEL, "--yolo",
                                          "--output-format", "json"],
                               service.url, gemini_env(tmp_path / "home"), gemini)
        done = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True,
                              timeout=300, stdin=subprocess.DEVNULL)
        took = time.monotonic() - started
    print(f"gemini ran {took:.1f} s, {len(upstream.calls)} model calls\n{log_of(service)}")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert json.loads(done.stdout)["response"], done.stdout
    assert f"contextsynth wrap: gemini -> {service.url} (GOOGLE_GEMINI_BASE_URL)\n" in \
        done.stderr
    # Its steps stream on the model asked for; a side check (is the model looping? who
    # speaks next?) asks a flash model for JSON, whole.
    routes = tuple(sorted({a.path for a in service.answered if ":" in a.path}))
    assert f"/v1beta/models/{MODEL}:streamGenerateContent" in routes, routes
    assert all(r.startswith("/v1beta/models/") for r in routes), routes
    assert_the_run_went_as_scripted(repo, player, upstream, service, routes, valid.gemini)
    # The call was answered inside the stream: Gemini CLI's history never holds it.
    sent = [call for a in service.answered if isinstance(a.body, dict)
            for content in a.body.get("contents") or [] for call in calls_of(content)]
    assert sent and EXPAND_TOOL not in {call.name for call in sent}
    record_session("gemini-cli", service, f"/v1beta/models/{MODEL}:streamGenerateContent",
                   repo)
