"""Where ``scripts/agents.sh`` installed each program, and the skip when it did not."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
AGENTS = ROOT / ".agents"


def npm_bin(package: str, command: str) -> Path:
    """The executable of an npm program, or a skip naming its package."""
    path = AGENTS / "npm" / "node_modules" / ".bin" / command
    if not path.exists():
        pytest.skip(f"{package} is not installed (scripts/agents.sh installs it into "
                    f".agents/npm)")
    return path


def venv_bin(name: str, requirement: str, command: str) -> Path:
    """The executable of a Python program in its own venv, or a skip naming it."""
    path = AGENTS / "venv" / name / "bin" / command
    if not path.exists():
        pytest.skip(f"{requirement} is not installed (scripts/agents.sh installs it into "
                    f".agents/venv/{name})")
    return path


def wrapped(program: str, args: list[str], service_url: str, env: dict[str, str],
            binary: Path) -> tuple[list[str], dict[str, str]]:
    """The command and environment that run ``program`` as a user would, through
    ``contextsynth wrap`` at the service (this tree's, whatever the venv installed)."""
    path = f"{binary.parent}{os.pathsep}{env.get('PATH', os.environ['PATH'])}"
    return ([sys.executable, "-m", "app.cli", "wrap", program, *args],
            {**env, "PATH": path, "CONTEXTSYNTH_URL": service_url, "PYTHONPATH": str(ROOT)})
