"""The documentation's shape: a short front page, pages that link up, and the settings
table its script writes. (tests/test_readme.py runs what the pages show.)"""

import json
import re
from pathlib import Path

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


# The eval's figures as the README quotes them, against the eval's own output that
# docs/eval.md records under "Results" (`contextsynth eval --split test|tune`, pasted as
# printed): a figure retyped into the README cannot drift from it.
_FIGURE = re.compile(r"^[+-]?\d+(\.\d+)?(%|p)?$|^-$")


def _eval_rows() -> dict[tuple[str, str], list[str]]:
    """(table, first cell) -> the other cells of each row of the blocks under docs/eval.md's
    Results: ("test" or "tune", compactor) for the overall tables, ("family", family) for
    the per-family ones (their split is a cell)."""
    out: dict[tuple[str, str], list[str]] = {}
    test, tune = docs.section("Results").split("the `tune` split", 1)
    for split, text in (("test", test), ("tune", tune)):
        for block in re.findall(r"```\n(.*?)```", text, re.DOTALL):
            for line in block.splitlines():
                cells = line.split()
                if len(cells) > 3 and all(_FIGURE.match(c) for c in cells[2:]):
                    if cells[1] == split:
                        out["family", cells[0]] = cells[2:]
                    else:
                        out[split, cells[0]] = cells[1:]
    return out


def test_the_readme_quotes_the_eval_as_docs_eval_records_it():
    rows = _eval_rows()
    assert ("family", "tau2-bench") in rows and ("test", "keep-last-16") in rows
    quality = docs.section("Quality")
    table = [[c.strip() for c in line.strip("|").split("|")] for line in quality.splitlines()
             if line.startswith("| ") and not line.startswith(("| family", "| ---"))]
    assert table, "the README's Quality section has no family table"
    for family, *cells in table:
        assert cells == rows["family", family], family
    # The prose's percentages: the test split's fast-mid row and the window it names.
    prose = " ".join(line for line in quality.splitlines() if not line.startswith("|"))
    printed = {*rows["test", "synthesize-fast-mid"],
               *rows["test", "keep-last-16"]}
    quoted = re.findall(r"\d+\.\d%", prose.split("Per agent family")[0])
    assert quoted and [q for q in quoted if q not in printed] == []
    calls = re.search(r"\(([\d,]+) calls\)", prose)
    assert calls and calls[1].replace(",", "") == rows["test", "synthesize-fast-mid"][0]


# The figures the docs quote from `contextsynth bench`, against the runs recorded in
# docs/figures/bench.json (each as `bench --json` wrote it, under the name of its kind): a
# section quotes only figures that a recorded run of the kinds it names printed, says the
# machine's size they were measured on (and that the engine was interpreted, when it was),
# and shows a run's output as the run printed it. Of plain bench's output only the summary
# under its table of transcripts is quoted (the table holds most figures there are); of
# the others, every printed line. A section that quotes bench joins here (a test below
# finds one that quotes a timing and is not here).
_BENCH_SECTIONS = {
    "Cold and warm calls, measured": {
        "cold": "summary", "cold-before": "summary", "cold-3db4337": "summary",
        "replay": "all", "replay-before": "all",
        "stages": "all", "stages-before": "all", "stages-52c44f4": "all"},
    "The warm path": {"long": "all"},
    "A fleet of real agents": {"load": "all"},
    "`bench --long`": {"long": "all"},
    "`bench --largest`": {"largest": "all"},
    "`bench --webhooks`": {"webhooks": "all"},
    "`bench --redis`": {"redis": "all"},
    "Prompt cache, recall and overhead": {"proxy": "all", "proxy-no-expand-tool": "all"},
    "Scaling: an agent's steps on one replica": {"fleet": "all", "fleet-replicas": "all"},
    "Memory: one budget for every cache": {
        "fleet": "all", "fleet-1gib-pod": "all", "fleet-1.5gib-pod": "all"},
}
# The eval's figures quoted outside docs/eval.md and the README's Quality section: the
# rows of `contextsynth eval --split test`'s table (as docs/figures/eval.json records it)
# that a section may quote from.
_EVAL_QUOTES = {
    "Prompt cache, recall and overhead": ("synthesize-fast-mid",),
    "Prompt caching: the stable prefix and Anthropic breakpoints": (
        "synthesize-fast-mid", "synthesize-rebuild-mid", "keep-last-16"),
    "`POST /compress-history`": ("synthesize-fast-mid", "compress-history-fast"),
}
_DECIMAL = re.compile(r"\d+\.\d+")
_CODE = re.compile(r"^```\w+\n.*?^```", re.DOTALL | re.MULTILINE)  # a block in a language
_SET_SIZE = re.compile(r"\b\d+\.\d+ (GiB|MiB)\b")


def _bench_runs() -> dict[str, list[dict]]:
    return json.loads((docs.DOCS / "figures" / "bench.json").read_text())


def _eval_figures(compactors: tuple[str, ...]) -> set[str]:
    runs = json.loads((docs.DOCS / "figures" / "eval.json").read_text())
    return {figure for run in runs["test"] for line in run["printed"].splitlines()
            if line.split()[:1] and line.split()[0] in compactors
            for figure in _DECIMAL.findall(line)}


def _quotable(printed: str, part: str) -> str:
    """The lines of a run the docs may quote from: all, or those under its last rule."""
    if part == "all":
        return printed
    lines = printed.splitlines()
    rules = [i for i, line in enumerate(lines) if line and set(line) == {"-"}]
    return "\n".join(lines[rules[-1] + 1:])


def _collapsed(line: str) -> str:
    return " ".join(line.split())


def test_the_docs_quote_bench_and_the_eval_as_a_recorded_run_printed_them():
    runs = _bench_runs()
    for title in {**_BENCH_SECTIONS, **_EVAL_QUOTES}:
        text = docs.section(title)
        kinds = _BENCH_SECTIONS.get(title, {})
        assert all(runs.get(kind) for kind in kinds), f"{title!r}: a kind with no run"
        recorded = [(run, part) for kind, part in kinds.items() for run in runs[kind]]
        printed = {figure for run, part in recorded
                   for figure in _DECIMAL.findall(_quotable(run["printed"], part))}
        printed |= _eval_figures(_EVAL_QUOTES.get(title, ()))
        # A snippet's 0.1 is no figure, nor a size set in GiB or MiB (a 1.5 GiB pod).
        quoted = _DECIMAL.findall(_SET_SIZE.sub("", _CODE.sub("", text)))
        assert quoted, f"{title!r} quotes no figure"
        assert [q for q in quoted if q not in printed] == [], title
        for cpus in {run["machine"]["cpus"] for run, _ in recorded}:
            assert re.search(rf"\b{cpus} (shared )?cores\b", text), \
                f"{title!r} does not say the figures were measured on {cpus} cores"
        if any(run["machine"]["engine"] == "interpreted" for run, _ in recorded):
            assert "interpreted" in text, \
                f"{title!r} does not say its figures are the interpreted engine's"
        # A block that starts as a run's output is that output, line for line (a table
        # composed from several runs starts otherwise, and its figures are held above).
        lines = {_collapsed(line) for run, _ in recorded for line in run["printed"].splitlines()}
        for block in re.findall(r"```\n(.*?)```", text, re.DOTALL):
            shown = [_collapsed(line) for line in block.splitlines() if line.strip()]
            if shown and shown[0] in lines:
                assert [line for line in shown if line not in lines] == [], title


# A timing (a decimal in ms or s, or a ratio like 1.8x) that no recorded run printed:
# the section it is in says it was measured by hand, and on how many cores.
_TIMING = re.compile(r"\b\d+\.\d+(?:-\d+\.\d+)? ?(?:ms|s)\b|\b\d+\.\d+x\b")
# What reads as a timing but is a setting or a price.
_NOT_MEASURED = {("cli.md", "0.4 s"),  # bench's least time per measurement
                 ("deploy.md", "2.5 s"),  # an alert's threshold
                 ("eval.md", "0.1x"), ("eval.md", "1.25x")}  # a provider's cache prices


def _parts(page: Path) -> list[tuple[str, str]]:
    """A page's text between one heading and the next, with the heading's title."""
    lines = page.read_text().splitlines()
    marks = docs.headings("\n".join(lines))
    return [(mark.title, "\n".join(lines[mark.line + 1:end])) for mark, end in
            zip(marks, [m.line for m in marks[1:]] + [len(lines)], strict=True)]


def test_a_timing_no_recorded_run_printed_says_how_and_where_it_was_measured():
    checked = [docs.section(title) for title in
               {*_BENCH_SECTIONS, *_EVAL_QUOTES, *_EVAL_SECTIONS, "Quality"}]
    unsaid = []
    for page in docs.pages():
        for title, text in _parts(page):
            timings = [t[0] for t in _TIMING.finditer(text)
                       if (page.name, t[0]) not in _NOT_MEASURED]
            if not timings or any(text in section for section in checked):
                continue
            if not ("by hand" in text and re.search(r"\b\d (shared )?cores\b", text)):
                unsaid.append(f"{page.name}: {title}: {', '.join(timings)}")
    assert unsaid == []


def test_the_recorded_bench_runs_printed_what_their_rows_make():
    from app.cli import bench

    runs = _bench_runs()
    assert runs["cold"], "no plain bench run recorded"
    for run in runs["cold"] + runs["cold-before"]:
        assert run["printed"].splitlines() == bench.table(run["rows"])
        assert run["machine"]["engine"] == "compiled", "the figures are the compiled engine's"


# docs/eval.md's tables, against the eval's own output as recorded in
# docs/figures/eval.json (`contextsynth eval --split test`, `--split tune` and `--long`,
# printed as they ran): a row the page shows must be the start of a row one of them
# printed (the page leaves out the ms/call column), so a figure retyped or left stale
# after an engine change fails here.
_EVAL_SECTIONS = ("Results", "Long sessions")


def test_the_eval_page_quotes_the_eval_as_a_recorded_run_printed_it():
    runs = json.loads((docs.DOCS / "figures" / "eval.json").read_text())
    printed = [line.split() for kind in ("test", "tune", "long") for run in runs[kind]
               for line in run["printed"].splitlines()]
    for title in _EVAL_SECTIONS:
        rows = [line.split() for block in re.findall(r"```\n(.*?)```", docs.section(title),
                                                      re.DOTALL)
                for line in block.splitlines()
                if sum(bool(_FIGURE.match(cell)) for cell in line.split()) >= 3]
        assert rows, f"{title!r} shows no table of figures"
        stale = [" ".join(row) for row in rows
                 if not any(p[: len(row)] == row for p in printed)]
        assert stale == [], title
