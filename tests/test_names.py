"""One name per concept: no public class is defined in two modules of ``app``, so a
name read anywhere (an import, a traceback, a type in the docs) means one thing."""

import ast
from collections import defaultdict
from pathlib import Path

APP = Path(__file__).resolve().parents[1] / "app"


def test_no_public_class_is_defined_twice():
    where: dict[str, list[str]] = defaultdict(list)
    for path in sorted(APP.rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                where[node.name].append(str(path.relative_to(APP.parent)))
    twice = {name: paths for name, paths in where.items() if len(paths) > 1}
    assert not twice, twice
