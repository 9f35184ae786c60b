"""scripts/serve.sh and scripts/test.sh set the checkout up on first use: serving installs
what serving needs, the tests add the development tools, and neither installs twice.

The scripts run here against a stub interpreter that records what it was asked to do,
in a copy of the files they read: what they install is the scripts' logic, not pip's.
"""

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

STUB = """#!/usr/bin/env bash
echo "$(basename "$0") $*" >> "$LOG"
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


def run(checkout: Path, script: str, *args: str) -> list[str]:
    log = checkout / "calls.log"
    log.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXTSYNTH_")}
    done = subprocess.run(["bash", f"scripts/{script}", *args], cwd=checkout, env={
        **env, "LOG": str(log)}, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return log.read_text().splitlines() if log.exists() else []


def installs(calls: list[str]) -> list[str]:
    return [c.split(" -e ", 1)[1] for c in calls if " pip install " in c and " -e " in c]


def test_serving_installs_without_the_development_tools_and_says_so(checkout: Path):
    calls = run(checkout, "serve.sh", "--port", "9000")
    assert installs(calls) == ["."]
    assert calls[-2:] == ["contextsynth serve --port 9000", "host 127.0.0.1"]  # this machine
    # Set up once: the next start serves at once.
    again = run(checkout, "serve.sh")
    assert installs(again) == [] and again == ["contextsynth serve", "host 127.0.0.1"]


def test_the_tests_add_the_development_tools_once_and_serving_then_reuses_them(checkout: Path):
    run(checkout, "serve.sh")
    calls = run(checkout, "test.sh")
    assert installs(calls) == [".[dev]", "clients/python"]
    assert installs(run(checkout, "test.sh")) == []
    assert installs(run(checkout, "serve.sh")) == []  # the dev install holds what serving needs


def test_a_changed_engine_source_rebuilds_only_the_engine(checkout: Path):
    run(checkout, "test.sh")
    source = checkout / "app" / "engine" / "core.py"
    later = source.stat().st_mtime + 5
    os.utime(source, (later, later))
    calls = run(checkout, "test.sh")
    assert [c for c in calls if "pip install" in c] == [
        "python -m pip install --quiet --no-deps -e ."]
