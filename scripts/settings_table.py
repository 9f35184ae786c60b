"""Rewrite the README's configuration table from the Settings model (run after adding one)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.settings import Settings

README = Path(__file__).resolve().parents[1] / "README.md"
HEADER = "| variable | default | meaning |\n| --- | --- | --- |\n"


def rows() -> str:
    out = []
    for name, field in Settings.model_fields.items():
        if field.default_factory is not None:
            default = str(field.default_factory())  # type: ignore[call-arg]
        else:
            default = "unset" if field.default is None else str(field.default)
        out.append(f"| `CONTEXTSYNTH_{name.upper()}` | `{default}` | {field.description} |")
    return "\n".join(out)


def main() -> None:
    text = README.read_text()
    start = text.index(HEADER)
    end = text.index("\n\n", start)
    README.write_text(text[:start] + HEADER + rows() + text[end:])


if __name__ == "__main__":
    main()
