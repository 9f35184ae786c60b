"""Rewrite the settings table of docs/configuration.md from the Settings model (run after
adding, removing or changing the default of a setting).

The rows follow the model: one per setting, its default as the model has it. A row's
meaning is kept as the page says it (it is often fuller than the field's one-line
description); a new setting gets its field's description, to be edited there.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.settings import Settings

PAGE = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"
HEADER = "| variable | default | meaning |\n| --- | --- | --- |\n"


def _default(value: object) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):  # as an environment variable spells it
        return "true" if value else "false"
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return str(getattr(value, "value", value))


def _meanings(table: str) -> dict[str, str]:
    """The meaning column of each row the page has now, by variable."""
    out = {}
    for line in table.splitlines():
        cells = line.split(" | ", 2)
        if len(cells) == 3 and line.startswith("| `CONTEXTSYNTH_"):
            out[cells[0][3:-1]] = cells[2].removesuffix(" |")
    return out


def rows(meanings: dict[str, str] | None = None) -> str:
    out = []
    for name, field in Settings.model_fields.items():
        if field.default_factory is not None:
            default = _default(field.default_factory())  # type: ignore[call-arg]
        else:
            default = _default(field.default)
        variable = f"CONTEXTSYNTH_{name.upper()}"
        meaning = (meanings or {}).get(variable) or field.description
        out.append(f"| `{variable}` | `{default}` | {meaning} |")
    return "\n".join(out)


def render(text: str) -> str:
    """``text`` with its settings table written anew (the rest of it as it was)."""
    start = text.index(HEADER) + len(HEADER)
    end = text.find("\n\n", start)
    end = len(text.rstrip("\n")) if end < 0 else end
    return text[:start] + rows(_meanings(text[start:end])) + text[end:]


def main() -> None:
    PAGE.write_text(render(PAGE.read_text()))


if __name__ == "__main__":
    main()
