"""The engine's hot modules are compiled as setup.py says, unless a pure build was asked for."""

import ast
import importlib
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def compiled_paths() -> list[str]:
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "COMPILED":
            return list(ast.literal_eval(node.value))
    raise AssertionError("setup.py names no COMPILED modules")


def test_every_module_setup_compiles_exists_and_is_in_the_engine():
    paths = compiled_paths()
    assert paths
    for path in paths:
        assert (ROOT / path).is_file(), path
        assert path.startswith("app/engine/"), path  # the pure core only


@pytest.mark.skipif(os.environ.get("CONTEXTSYNTH_PURE_PYTHON", "") not in ("", "0"),
                    reason="a pure-Python build was asked for")
def test_the_hot_modules_run_compiled():
    for path in compiled_paths():
        module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
        assert module.__file__ is not None
        assert module.__file__.endswith(".so"), f"{path} runs uncompiled: {module.__file__}"
