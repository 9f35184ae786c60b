"""The engine's packages import downwards only: transcript, then reading, then
compaction, then jobs, with a few shared modules at the bottom. A strategy that
reached into a job, or a reader into a strategy, would tie the lower concept to
the higher one; this test names the import that does."""

import ast
from pathlib import Path

import pytest

ENGINE = Path(__file__).resolve().parents[2] / "app" / "engine"
# Lowest first. The engine's own root modules (errors, memo, jsontext, prompts) are
# layer 0: every package may use them, and they use none of the packages.
LAYERS = ("transcript", "reading", "compaction", "jobs")


def layer_of(module: str) -> int:
    parts = module.split(".")
    if parts[:2] != ["app", "engine"] or len(parts) < 3:
        return -1  # outside the engine: the purity test rules those imports
    return LAYERS.index(parts[2]) + 1 if parts[2] in LAYERS else 0


def module_name(path: Path) -> str:
    relative = path.relative_to(ENGINE.parents[1]).with_suffix("")
    parts = list(relative.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def upward_imports(source: str, module: str) -> list[str]:
    own = layer_of(module)
    found = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names
                                     if node.module == "app.engine"]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        found += [f"line {node.lineno}: {n}" for n in names
                  if n != "app.engine" and layer_of(n) > own]
    return found


@pytest.mark.parametrize("path", sorted(ENGINE.rglob("*.py")),
                         ids=lambda p: str(p.relative_to(ENGINE)))
def test_engine_modules_import_only_their_layer_or_below(path: Path):
    assert upward_imports(path.read_text(), module_name(path)) == []


def test_the_check_sees_an_upward_import():
    assert module_name(ENGINE / "reading" / "phases.py") == "app.engine.reading.phases"
    reader = "app.engine.reading.phases"
    assert upward_imports("from app.engine.compaction.base import Span\n", reader) == [
        "line 1: app.engine.compaction.base"]
    assert upward_imports("from app.engine import compaction\n", reader) == [
        "line 1: app.engine.compaction"]
    assert upward_imports("import app.engine.jobs.caches\n", "app.engine.prompts") == [
        "line 1: app.engine.jobs.caches"]
    # Downwards and sideways are fine.
    assert upward_imports("from app.engine.transcript.model import Message\n"
                          "from app.engine.reading.calls import validate\n"
                          "from app.engine.errors import InvalidOption\n", reader) == []
