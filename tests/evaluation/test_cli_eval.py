"""``contextsynth eval`` from the command line: table, JSON, plot, and through a service."""

import json
import sys
from dataclasses import replace

import pytest

from app.cli import main
from app.evaluation.report import PLOT_EXTRA, plot, summaries
from app.evaluation.run import EvalOptions, evaluate
from tests.support.subprocess_server import running_service

SMALL = ["--steps", "3", "--planted", "2", "--file", "sweagent-ctf-crypto-eps",
         "--file", "tau-airline-gpt4o-task017"]


def test_eval_prints_the_table_and_writes_json_and_plot(tmp_path, capsys):
    out_json, out_png = tmp_path / "eval.json", tmp_path / "eval.png"
    assert main(["eval", *SMALL, "--json", str(out_json), "--plot", str(out_png)]) == 0
    captured = capsys.readouterr()
    for name in ("none", "keep-last-8", "synthesize-fast-mid", "observation-mask-mid",
                 "compress-history-fast"):
        assert f"\n{name} " in captured.out
    assert "overridden value" in captured.out  # the planted table's legend
    assert "[1/2] sweagent-ctf-crypto-eps.jsonl" in captured.err  # progress on stderr
    data = json.loads(out_json.read_text())
    assert data["options"]["steps"] == 3
    assert data["compactors"]["none"]["recall"] == 1.0
    assert set(data["compactors"]["keep-last-4"]["cost"]) == {"openai", "anthropic"}
    assert out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out_png.stat().st_size > 10_000


def test_unknown_compactors_are_named_with_the_choices(capsys):
    assert main(["eval", *SMALL, "--compactors", "keep-last-8,magic"]) == 2
    err = capsys.readouterr().err
    assert "unknown compactors: magic" in err and "synthesize-fast-mid" in err


def test_without_matplotlib_the_plot_says_how_to_install_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    with pytest.raises(RuntimeError, match="contextsynth\\[eval\\]"):
        plot({}, tmp_path / "x.png")
    assert main(["eval", *SMALL, "--plot", str(tmp_path / "x.png")]) == 2
    assert PLOT_EXTRA in capsys.readouterr().err  # said before the run, not after it


def test_through_a_running_service_the_scores_are_the_engines(encoder):
    options = EvalOptions(steps=3, planted_runs=2, files=("sweagent-ctf-crypto-eps",),
                          only=("keep-last-8", "synthesize-fast-mid", "compress-history-fast"))
    local = summaries(evaluate(options, encoder, progress=lambda _: None).total)
    with running_service() as url:
        remote = summaries(evaluate(replace(options, url=url), encoder,
                                    progress=lambda _: None).total)
    assert set(remote) == {"none", "keep-last-8", "synthesize-fast-mid",
                           "compress-history-fast"}
    for name, scores in local.items():
        for key in ("reduction", "recall", "recall_with_expand", "planted_survival",
                    "error_retention", "prefix_reuse"):
            assert remote[name][key] == pytest.approx(scores[key]), (name, key)


def test_a_split_and_a_family_are_chosen_and_scored_per_family(tmp_path, capsys):
    out_json = tmp_path / "eval.json"
    assert main(["eval", "--split", "test", "--family", "webvoyager", "--steps", "2",
                 "--planted", "0", "--compactors", "keep-last-8,synthesize-fast-mid",
                 "--json", str(out_json)]) == 0
    out = capsys.readouterr().out
    assert "synthesize-fast-mid, per agent family" in out
    [row] = [line for line in out.splitlines() if line.startswith("webvoyager ")]
    assert row.split()[1] == "test"
    data = json.loads(out_json.read_text())
    assert data["options"]["split"] == "test" and list(data["families"]) == ["webvoyager"]
    family = data["families"]["webvoyager"]
    assert family["margin"] == pytest.approx(family["recall"] - family["window_recall"])
    # A family of the other split is not there: said, not an empty table.
    assert main(["eval", "--split", "tune", "--family", "webvoyager"]) == 2
    assert "no runs of family webvoyager" in capsys.readouterr().err
