"""The documentation as tests read it: the README (the front page) and the pages of
docs/, their headings, sections and links."""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"

_FENCE = re.compile(r"^(```|~~~)")
_HEADING = re.compile(r"^(#{1,6}) +(.+?) *#*$")
# [text](target): a target without a scheme is a file of this checkout, maybe #anchored.
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


@dataclass(frozen=True)
class Heading:
    level: int
    title: str
    line: int  # index into the page's lines


def pages() -> list[Path]:
    """The README first, then every page of docs/ by name."""
    return [README, *sorted(DOCS.glob("*.md"))]


def text() -> str:
    """Every page's text, one after another."""
    return "\n\n".join(page.read_text() for page in pages())


def headings(markdown: str) -> list[Heading]:
    """The headings outside code blocks (a shell comment in a block is not one)."""
    out, fenced = [], False
    for number, line in enumerate(markdown.splitlines()):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and (match := _HEADING.match(line)):
            out.append(Heading(len(match[1]), match[2], number))
    return out


def section(title: str) -> str:
    """The text under the one heading, on any page, whose title is ``title``, up to the
    next heading of the same level or higher."""
    found = []
    for page in pages():
        lines = page.read_text().splitlines()
        marks = headings("\n".join(lines))
        for i, mark in enumerate(marks):
            if mark.title == title:
                end = next((m.line for m in marks[i + 1:] if m.level <= mark.level),
                           len(lines))
                found.append("\n".join(lines[mark.line + 1:end]))
    assert len(found) == 1, f"{len(found)} headings titled {title!r}"
    return found[0]


def slug(title: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped but for
    hyphens, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of a page's headings (a repeated title gets -1, -2... as on GitHub)."""
    seen: dict[str, int] = {}
    out = set()
    for mark in headings(page.read_text()):
        base = slug(mark.title)
        count = seen.get(base, 0)
        seen[base] = count + 1
        out.add(base if count == 0 else f"{base}-{count}")
    return out


def links(page: Path) -> list[str]:
    """The targets of a page's links outside code blocks, as written."""
    out, fenced = [], False
    for line in page.read_text().splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            out.extend(_LINK.findall(re.sub(r"`[^`]*`", "", line)))
    return out


def settings_table_script() -> ModuleType:
    """scripts/settings_table.py, which writes the table of docs/configuration.md."""
    path = ROOT / "scripts" / "settings_table.py"
    spec = importlib.util.spec_from_file_location("settings_table", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
