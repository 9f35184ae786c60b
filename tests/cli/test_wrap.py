"""``contextsynth wrap``: a program run with its base URL at the service, one started
when none answers. The real programs run through it in tests/agents."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import httpx
import pytest

from app.cli import main, wrap
from tests.agents.harness import proxy
from tests.support.redis_server import free_port

FAKE = """#!{python}
import os, sys, urllib.request
url = os.environ["FAKE_BASE_URL"]
status = urllib.request.urlopen(url + "/healthz").status
print(f"base={{url}} healthz={{status}} args={{sys.argv[1:]}}")
sys.exit(int(os.environ.get("FAKE_EXIT", "0")))
"""


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A program "fake" that prints where its base URL points and what answers there."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "fake-agent"
    script.write_text(FAKE.format(python=sys.executable))
    script.chmod(0o755)
    monkeypatch.setitem(wrap.PROGRAMS, "fake", wrap.Program(
        "fake-agent", "fake-package", lambda url: {"FAKE_BASE_URL": url},
        lambda url: ["--first"]))
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


def test_a_program_runs_pointed_at_the_running_service(fake, capfd):
    with proxy("http://127.0.0.1:9") as service:  # the service in a thread: it answers
        url = service.url
        status = wrap.wrap("fake", ["-p", "task"],
                           {**fake, "CONTEXTSYNTH_URL": url, "FAKE_EXIT": "3"})
    out, err = capfd.readouterr()
    assert status == 3  # the program's
    assert out == f"base={url} healthz=200 args=['--first', '-p', 'task']\n"
    assert err == f"contextsynth wrap: fake -> {url} (FAKE_BASE_URL)\n"


def test_a_service_is_started_when_none_answers_and_stopped_after(fake, capfd):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    assert wrap.wrap("fake", [], {**fake, "CONTEXTSYNTH_URL": url}) == 0
    out, err = capfd.readouterr()
    assert out.startswith(f"base={url} healthz=200")
    assert err.startswith(f"contextsynth wrap: fake -> {url} (FAKE_BASE_URL; started one")
    assert err.count("\n") == 1
    with pytest.raises(httpx.ConnectError):  # the service is gone with the program
        httpx.get(f"{url}/healthz", timeout=5)


def test_a_service_elsewhere_that_does_not_answer_is_not_started(fake, capfd):
    status = wrap.wrap("fake", [], {**fake, "CONTEXTSYNTH_URL": "http://192.0.2.1:8080"})
    assert status == wrap.NO_SERVICE
    assert "not this machine's address" in capfd.readouterr().err


def test_a_program_not_installed_says_where_it_comes_from(capfd, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    assert main(["wrap", "claude", "-p", "hi"]) == wrap.NOT_FOUND
    assert capfd.readouterr().err == ("contextsynth wrap: claude is not on PATH (it comes "
                                      "from @anthropic-ai/claude-code)\n")


def test_each_program_is_pointed_by_its_own_setting():
    url = "http://127.0.0.1:8080"
    assert wrap.PROGRAMS["claude"].env(url) == {"ANTHROPIC_BASE_URL": url}
    codex = wrap.PROGRAMS["codex"].args(url)
    assert codex[-2:] == ["-c", "model_provider=contextsynth"]
    assert f'base_url="{url}/v1"' in codex[1] and 'wire_api="responses"' in codex[1]


def test_gemini_cli_gets_the_base_url_and_the_api_key_sign_in(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    url = "http://127.0.0.1:8080"
    env = wrap.PROGRAMS["gemini"].env(url)
    assert env["GEMINI_CLI_SYSTEM_SETTINGS_PATH"] == str(
        tmp_path / "contextsynth" / "gemini-settings.json")
    assert env["GOOGLE_GEMINI_BASE_URL"] == url
    settings = json.loads(Path(env["GEMINI_CLI_SYSTEM_SETTINGS_PATH"]).read_text())
    assert settings == {"security": {"auth": {"selectedType": "gemini-api-key"}}}
    assert wrap.PROGRAMS["gemini"].args(url) == []


@pytest.mark.parametrize(("name", "env", "args"), [
    ("qwen", {"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"}, ["--auth-type", "openai"]),
    ("aider", {"OPENAI_API_BASE": "http://127.0.0.1:8080/v1"}, []),
    ("mini", {"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"}, []),
])
def test_the_openai_programs_get_the_base_url_with_its_v1(name, env, args):
    program = wrap.PROGRAMS[name]
    assert program.env("http://127.0.0.1:8080") == env
    assert program.args("http://127.0.0.1:8080") == args
