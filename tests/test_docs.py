"""The documentation's shape: a short front page, pages that link up, and the settings
table its script writes. (tests/test_readme.py runs what the pages show.)"""

import re

from app.settings import Settings
from tests.support import docs

MAX_README_LINES = 260


def test_the_readme_is_a_front_page():
    lines = docs.README.read_text().splitlines()
    assert len(lines) <= MAX_README_LINES, \
        f"README.md has {len(lines)} lines: move reference text to a page in docs/"


def test_the_readme_links_every_docs_page():
    linked = {t.split("#", 1)[0] for t in docs.links(docs.README) if t.startswith("docs/")}
    assert linked, "the README links no page of docs/"
    assert {f"docs/{page.name}" for page in docs.DOCS.glob("*.md")} <= linked
    for target in linked:
        assert (docs.ROOT / target).is_file(), target


def test_every_link_to_a_page_or_heading_resolves():
    broken = []
    for page in docs.pages():
        for target in docs.links(page):
            if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            if path and not path.endswith(".md"):
                continue  # a folder or a file of the checkout (clients/python, ...)
            linked = (page.parent / path).resolve() if path else page
            if not linked.is_file():
                broken.append(f"{page.name}: {target} (no such page)")
            elif anchor and anchor not in docs.anchors(linked):
                broken.append(f"{page.name}: {target} (no such heading)")
    assert broken == []


def test_every_docs_page_opens_with_its_title_and_purpose():
    for page in sorted(docs.DOCS.glob("*.md")):
        lines = page.read_text().splitlines()
        assert lines[0].startswith("# "), page.name
        assert lines[1] == "" and lines[2] and not lines[2].startswith(("#", "-", "|", "`")), \
            f"{page.name}: the title is followed by a sentence saying what the page is for"


def test_the_headings_the_tests_look_for_are_there_once():
    for title in ("From an agent", "Dashboards"):
        assert docs.section(title).strip(), title


def test_the_settings_script_adds_and_drops_rows_and_keeps_meanings():
    script = docs.settings_table_script()
    page = script.PAGE.read_text()
    first, *_ = Settings.model_fields
    variable = f"CONTEXTSYNTH_{first.upper()}"
    row = next(line for line in page.splitlines() if line.startswith(f"| `{variable}` |"))
    edited = page.replace(row, row.rsplit(" | ", 1)[0] + " | Said our way. |")
    edited = edited.replace(script.HEADER, script.HEADER + "| `CONTEXTSYNTH_GONE` | `1` | x |\n")
    missing = next(line for line in page.splitlines() if line.startswith("| `CONTEXTSYNTH_")
                   and line != row)
    edited = edited.replace(missing + "\n", "")
    rendered = script.render(edited)
    assert f"| `{variable}` | " in rendered and "| Said our way. |" in rendered
    assert "CONTEXTSYNTH_GONE" not in rendered
    assert missing.split(" | ")[0] in rendered  # back, with its field's description
    assert rendered.count("| `CONTEXTSYNTH_") == len(Settings.model_fields)
