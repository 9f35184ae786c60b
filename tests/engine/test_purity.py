"""app/engine/ stays pure: no I/O packages, no environment, no clock, no randomness."""

import ast
from pathlib import Path

import pytest

ENGINE = Path(__file__).resolve().parents[2] / "app" / "engine"
FORBIDDEN_MODULES = {"fastapi", "starlette", "httpx", "redis", "prometheus_client", "uvicorn",
                     "os", "time", "datetime", "random", "socket", "subprocess", "requests",
                     "pathlib", "asyncio", "anyio", "importlib", "io", "logging", "secrets",
                     "uuid"}
FORBIDDEN_NAMES = {"open", "input", "print", "getenv", "environ", "__import__"}


def violations(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            roots = {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            roots = {(node.module or "").split(".")[0]}
        else:
            roots = set()
        found += [f"line {node.lineno}: imports {r}" for r in roots & FORBIDDEN_MODULES]
        name = node.id if isinstance(node, ast.Name) else (
            node.attr if isinstance(node, ast.Attribute) else None)
        if name in FORBIDDEN_NAMES:
            found.append(f"line {node.lineno}: uses {name}")
    return found


def _sources() -> list[Path]:
    files = sorted(ENGINE.rglob("*.py"))
    assert len(files) > 10
    return files


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(ENGINE)))
def test_engine_module_is_pure(path: Path):
    assert violations(path.read_text()) == []


@pytest.mark.parametrize("source", [
    "import time\nnow = time.time()\n",
    "from datetime import datetime\n",
    "import os\nkey = os.environ['K']\n",
    "from fastapi import FastAPI\n",
    "import redis.asyncio\n",
    "import prometheus_client\n",
    "data = open('x').read()\n",
])
def test_the_check_catches_io_clock_and_environment(source):
    assert violations(source)
