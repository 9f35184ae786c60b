"""The per-family table: each family against its own keep-last line."""

from pathlib import Path

import pytest

from app.corpus import Run
from app.evaluation.families import families_table, score_families, window_line
from app.evaluation.scores import Tally


def test_the_window_line_is_read_between_its_points():
    points = [(0.0, 1.0), (0.5, 0.8), (0.8, 0.4)]
    assert window_line(points, 0.0) == 1.0
    assert window_line(points, 0.25) == pytest.approx(0.9)
    assert window_line(points, 0.65) == pytest.approx(0.6)
    # Past the narrowest window the line keeps falling along its last segment.
    assert window_line(points, 0.9) == pytest.approx(0.4 - 0.4 / 3)
    assert window_line(points, 5.0) == 0.0


def test_windows_wider_than_the_run_count_once_at_their_best():
    # keep-last-32 and none both send everything on a short run.
    points = [(0.0, 1.0), (0.0, 1.0), (0.4, 0.7), (0.6, 0.5)]
    assert window_line(points, 0.2) == pytest.approx(0.85)
    assert window_line([(0.3, 0.6)], 0.9) == 0.6


def _tally(before: int, after: int, needed: int, found: int, reused: int = 0) -> Tally:
    tally = Tally(needed=needed, found=found)
    tally.add_call(before, after, reused, 0.0)
    return tally


def _run(name: str, family: str) -> Run:
    return Run(Path(f"{name}.jsonl"), family, "test")


def test_a_family_below_its_window_shows_a_negative_margin_and_its_worst_run():
    ours = "synthesize-fast-mid"
    per_run = [
        (_run("a", "aider"), {"none": _tally(1000, 1000, 10, 10),
                              "keep-last-8": _tally(1000, 500, 10, 8),
                              ours: _tally(1000, 500, 10, 6)}),
        # A short run where notes send more than everything: its cost is above 100%.
        (_run("b", "aider"), {"none": _tally(100, 100, 2, 2, reused=90),
                              "keep-last-8": _tally(100, 100, 2, 2), ours: _tally(100, 100, 2, 2)}),
        (_run("c", "tau"), {"none": _tally(400, 400, 4, 4),
                            "keep-last-8": _tally(400, 300, 4, 2), ours: _tally(400, 200, 4, 4)}),
    ]
    rows = {r.family: r for r in score_families(per_run, ours)}
    assert list(rows) == ["aider", "tau"]
    aider = rows["aider"]
    assert aider.runs == 2 and aider.calls == 2
    assert aider.reduction == pytest.approx(1 - 600 / 1100)
    assert aider.recall == pytest.approx(8 / 12)
    # The window line through none (0, 1) and keep-last-8 (1 - 600/1100, 10/12).
    assert aider.window_recall == pytest.approx(10 / 12)
    assert aider.margin < 0
    assert aider.worst_run_cost["openai"] == pytest.approx(100 / (0.1 * 90 + 10))
    assert rows["tau"].margin > 0
    text = families_table(ours, list(rows.values()))
    assert "aider" in text and "-16.7p" in text

