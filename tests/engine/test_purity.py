"""app/engine/ stays pure: no I/O packages, no environment, no clock, no randomness."""

import ast
from pathlib import Path

import pytest

ENGINE = Path(__file__).resolve().parents[2] / "app" / "engine"
FORBIDDEN_MODULES = {"fastapi", "starlette", "httpx", "redis", "prometheus_client", "uvicorn",
                     "os", "time", "datetime", "random", "socket", "subprocess", "requests",
                     "pathlib", "asyncio", "anyio", "tiktoken_ext", "importlib"}
FORBIDDEN_CALLS = {"open", "input", "print", "getenv", "environ"}


def _sources() -> list[Path]:
    files = sorted(ENGINE.rglob("*.py"))
    assert len(files) > 10
    return files


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(ENGINE)))
def test_engine_module_is_pure(path: Path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots = {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            roots = {(node.module or "").split(".")[0]}
        else:
            roots = set()
        assert not roots & FORBIDDEN_MODULES, f"{path.name}:{node.lineno} imports {roots}"
        if isinstance(node, ast.Name | ast.Attribute):
            name = node.id if isinstance(node, ast.Name) else node.attr
            assert name not in FORBIDDEN_CALLS, f"{path.name}:{node.lineno} uses {name}"


def test_the_check_catches_a_clock_read(tmp_path):
    bad = "import time\nnow = time.time()\n"
    tree = ast.parse(bad)
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert imported & FORBIDDEN_MODULES
