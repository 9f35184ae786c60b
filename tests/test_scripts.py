"""scripts/serve.sh and scripts/test.sh set the checkout up on first use: serving installs
what serving needs, the tests add the development tools, and neither installs twice.
Serving does not wait for the engine's compile: it installs the engine interpreted and
compiles it in the background for the next start; the tests always run it compiled.

The scripts run here against a stub interpreter that records what it was asked to do,
in a copy of the files they read: what they install is the scripts' logic, not pip's.
"""

import os
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# One line a call (the background compile writes beside the foreground); an install
# says which engine it builds.
STUB = """#!/usr/bin/env bash
line="$(basename "$0") $*"
case "$*" in *"pip install"*" -e "*) line="$line [pure=${CONTEXTSYNTH_PURE_PYTHON:-0}]";; esac
echo "$line" >> "$LOG"
if [ "$(basename "$0")" = contextsynth ]; then echo "host $CONTEXTSYNTH_HOST" >> "$LOG"; fi
"""


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    copy = tmp_path / "checkout"
    (copy / "scripts").mkdir(parents=True)
    for name in ("setup.sh", "serve.sh", "test.sh"):
        shutil.copy(ROOT / "scripts" / name, copy / "scripts" / name)
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    (copy / "clients" / "python").mkdir(parents=True)
    (copy / "setup.py").write_text("")
    (copy / "app" / "engine").mkdir(parents=True)
    (copy / "app" / "engine" / "core.py").write_text("")
    bin_dir = copy / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for tool in ("python", "contextsynth", "ruff", "mypy"):
        stub = bin_dir / tool
        stub.write_text(STUB)
        stub.chmod(stub.stat().st_mode | stat.S_IXUSR)
    return copy


def run(checkout: Path, script: str, *args: str, stderr: list[str] | None = None,
        **env: str) -> list[str]:
    """What the script asked of the tools, the background compile's calls included once
    it has finished (the stubs return at once)."""
    log = checkout / "calls.log"
    log.unlink(missing_ok=True)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXTSYNTH_")}
    done = subprocess.run(["bash", f"scripts/{script}", *args], cwd=checkout, env={
        **clean, **env, "LOG": str(log)}, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    for _ in range(600):  # not a timing: the stub's compile ends within moments
        if not (checkout / ".venv" / ".compiling").exists():
            break
        time.sleep(0.05)
    if stderr is not None:
        stderr.extend(done.stderr.splitlines())
    return log.read_text().splitlines() if log.exists() else []


def installs(calls: list[str]) -> list[str]:
    """The -e installs, each with the engine's build mode: "." interpreted, ". compiled"."""
    out = []
    for call in calls:
        if " pip install " in call and " -e " in call:
            spec, pure = call.split(" -e ", 1)[1].split(" [pure=")
            if spec != "clients/python":
                spec += " compiled" if pure == "0]" else " interpreted"
            out.append(spec)
    return out


def test_serving_installs_without_the_development_tools_and_compiles_meanwhile(
        checkout: Path):
    said: list[str] = []
    calls = run(checkout, "serve.sh", "--port", "9000", stderr=said)
    # Served at once on the interpreted engine; the compile (dependencies already there)
    # runs beside it and is what the next start serves.
    assert installs(calls) == [". interpreted", ". compiled"]
    assert [c for c in calls if "--no-deps" in c] == [
        "python -m pip install --quiet --disable-pip-version-check --no-deps -e . [pure=0]"]
    assert "contextsynth serve --port 9000" in calls
    assert "host 127.0.0.1" in calls  # this machine
    assert any("interpreted engine while the compiled one builds" in line for line in said)
    assert (checkout / ".venv" / ".built-pure-0").exists()
    # Set up once: the next start serves the compiled engine at once.
    again = run(checkout, "serve.sh")
    assert installs(again) == [] and again == ["contextsynth serve", "host 127.0.0.1"]


def test_serving_asked_for_the_interpreted_engine_compiles_nothing(checkout: Path):
    calls = run(checkout, "serve.sh", CONTEXTSYNTH_PURE_PYTHON="1")
    assert installs(calls) == [". interpreted"]
    assert installs(run(checkout, "serve.sh", CONTEXTSYNTH_PURE_PYTHON="1")) == []


def test_the_tests_compile_the_engine_before_they_run(checkout: Path):
    calls = run(checkout, "test.sh")
    assert installs(calls) == [".[dev] compiled", "clients/python"]
    # Two pytest runs, side by side: the tests marked to run beside the rest, and the rest.
    pytest = [i for i, c in enumerate(calls) if c.startswith("python -m pytest")]
    assert len(pytest) == 2 and all("beside" in calls[i] for i in pytest)
    assert min(pytest) > max(i for i, c in enumerate(calls) if "pip" in c)
    assert not (checkout / ".venv" / ".compiling").exists()


def test_the_tests_add_the_development_tools_once_and_serving_then_reuses_them(checkout: Path):
    run(checkout, "serve.sh")
    calls = run(checkout, "test.sh")
    assert installs(calls) == [".[dev] compiled", "clients/python"]
    assert installs(run(checkout, "test.sh")) == []
    assert installs(run(checkout, "serve.sh")) == []  # the dev install holds what serving needs


def test_a_changed_engine_source_rebuilds_only_the_engine(checkout: Path):
    run(checkout, "test.sh")
    source = checkout / "app" / "engine" / "core.py"
    later = source.stat().st_mtime + 5
    os.utime(source, (later, later))
    calls = run(checkout, "test.sh")
    assert [c for c in calls if "pip install" in c] == [
        "python -m pip install --disable-pip-version-check --no-deps -e . [pure=0]"]


def test_serving_a_changed_engine_source_drops_the_stale_extension_and_compiles_it_again(
        checkout: Path):
    run(checkout, "serve.sh")
    stale = checkout / "app" / "engine" / "core.cpython-311-x86_64-linux-gnu.so"
    stale.write_text("")
    source = checkout / "app" / "engine" / "core.py"
    later = source.stat().st_mtime + 5
    os.utime(source, (later, later))
    calls = run(checkout, "serve.sh")
    assert not stale.exists()  # it would shadow the edited source
    assert installs(calls) == [". compiled"] and "contextsynth serve" in calls
