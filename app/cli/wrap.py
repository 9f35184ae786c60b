"""``contextsynth wrap PROGRAM [ARGS...]``: run a coding agent with its provider's base URL
pointed at the service, so that its requests go through proxy mode.

Each program is an entry of ``PROGRAMS``: the executable, the environment variables it
reads its base URL from, and the arguments (before the user's) that configure it when no
variable does. The service is the one at ``CONTEXTSYNTH_URL`` (default
http://127.0.0.1:8080); when nothing answers its ``/healthz`` there and the address is
this machine's, a ``contextsynth serve`` is started on that port for as long as the
program runs (its log in a temporary file). One line on stderr says where the program
points; the exit status is the program's.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import httpx

DEFAULT_URL = "http://127.0.0.1:8080"
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
_START_TIMEOUT_S = 60.0
# The exit statuses a shell gives a command it cannot find or cannot start.
NOT_FOUND = 127
NO_SERVICE = 2


def _none(url: str) -> list[str]:
    return []


@dataclass(frozen=True)
class Program:
    """How one program is pointed at the service at ``url`` (the service's root)."""

    command: str  # the executable, looked up on PATH
    package: str  # where it comes from, for the message when it is not installed
    env: Callable[[str], dict[str, str]]  # variables to set
    args: Callable[[str], list[str]] = field(default=_none)  # put before the user's
    via: str = ""  # what the one line names as the setting (default: the variables)


def _codex_args(url: str) -> list[str]:
    # Codex takes a base URL per model provider, in its config: a provider of our own,
    # given on the command line (-c), so the user's config.toml is left as it is. Its
    # key is the user's OPENAI_API_KEY, as the built-in provider's is.
    provider = (f'{{name="contextsynth", base_url="{url}/v1", env_key="OPENAI_API_KEY", '
                'wire_api="responses"}')
    return ["-c", f"model_providers.contextsynth={provider}",
            "-c", "model_provider=contextsynth"]


# Gemini CLI takes GOOGLE_GEMINI_BASE_URL, but that alone makes it choose its "gateway"
# sign-in, which it then refuses; a system settings file (which outranks the user's and
# the project's) choosing the API-key sign-in keeps the key and the base URL. Gemini CLI
# skips a system settings file with a folder above it that others may write to (/tmp),
# so it lives in the user's cache.
GEMINI_SETTINGS = {"security": {"auth": {"selectedType": "gemini-api-key"}}}


def gemini_settings_path() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "contextsynth" / "gemini-settings.json"


def _gemini_env(url: str) -> dict[str, str]:
    settings = gemini_settings_path()
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps(GEMINI_SETTINGS))
    return {"GOOGLE_GEMINI_BASE_URL": url, "GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(settings)}


PROGRAMS: dict[str, Program] = {
    "claude": Program("claude", "@anthropic-ai/claude-code",
                      lambda url: {"ANTHROPIC_BASE_URL": url}),
    "codex": Program("codex", "@openai/codex", lambda url: {}, _codex_args,
                     via="-c model_provider=contextsynth"),
    "gemini": Program("gemini", "@google/gemini-cli", _gemini_env,
                      via="GOOGLE_GEMINI_BASE_URL"),
    # Qwen Code's OpenAI sign-in reads the base URL, key and model from the environment.
    "qwen": Program("qwen", "@qwen-code/qwen-code",
                    lambda url: {"OPENAI_BASE_URL": f"{url}/v1"},
                    lambda url: ["--auth-type", "openai"]),
    # Aider and mini-swe-agent reach OpenAI-compatible models through litellm, which
    # reads these (Aider its own OPENAI_API_BASE, and sets litellm's from it).
    "aider": Program("aider", "aider-chat", lambda url: {"OPENAI_API_BASE": f"{url}/v1"}),
    "mini": Program("mini", "mini-swe-agent", lambda url: {"OPENAI_BASE_URL": f"{url}/v1"}),
}


def _answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


@dataclass
class _Started:
    process: subprocess.Popen[bytes]
    log: Path

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _start(url: str) -> _Started | str:
    """A service on ``url``'s port, answering; else why not."""
    parts = urlsplit(url)
    if parts.hostname not in _LOOPBACK:
        return (f"nothing answers {url}/healthz, and it is not this machine's address to "
                "start a service on: start it there, or set CONTEXTSYNTH_URL")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    log = Path(tempfile.mkstemp(prefix="contextsynth-wrap-", suffix=".log")[1])
    with open(log, "wb") as sink:
        # Its own session: a Ctrl-C meant for the program (Claude Code stops a turn on
        # it) does not stop the service under it.
        process = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "serve", "--host", "127.0.0.1", "--port",
             str(port), "--workers", "1"],
            stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
    started = _Started(process, log)
    deadline = time.monotonic() + _START_TIMEOUT_S
    while not _answers(url):
        if process.poll() is not None or time.monotonic() > deadline:
            started.stop()
            return f"the service did not start on {url} (its log: {log})"
        time.sleep(0.2)
    return started


def wrap(name: str, args: Sequence[str], environ: dict[str, str] | None = None) -> int:
    """Run program ``name`` with ``args`` through the service; its exit status."""
    environ = dict(os.environ if environ is None else environ)
    program = PROGRAMS[name]
    executable = shutil.which(program.command, path=environ.get("PATH"))
    if executable is None:
        print(f"contextsynth wrap: {program.command} is not on PATH (it comes from "
              f"{program.package})", file=sys.stderr)
        return NOT_FOUND
    url = environ.get("CONTEXTSYNTH_URL", DEFAULT_URL).rstrip("/")
    started: _Started | None = None
    if not _answers(url):
        made = _start(url)
        if isinstance(made, str):
            print(f"contextsynth wrap: {made}", file=sys.stderr)
            return NO_SERVICE
        started = made
    settings = program.env(url)
    via = program.via or ", ".join(settings)
    where = f"; started one for it, log: {started.log}" if started else ""
    print(f"contextsynth wrap: {name} -> {url} ({via}{where})", file=sys.stderr)
    try:
        return _run([executable, *program.args(url), *args], {**environ, **settings})
    finally:
        if started is not None:
            started.stop()


def _run(command: list[str], env: dict[str, str]) -> int:
    """The program in the foreground; its exit status as a shell gives it."""
    child = subprocess.Popen(command, env=env)
    # A Ctrl-C is the program's to handle (Claude Code stops a turn on it, and goes on):
    # this process waits for it either way.
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    try:
        status = child.wait()
    finally:
        if main:
            signal.signal(signal.SIGINT, previous)
    return 128 - status if status < 0 else status
