"""The corpus lives in the repository: a clone needs nothing beside it."""

import json
import subprocess
from pathlib import Path

import pytest

from app.corpus import (
    CORPUS_DIR,
    SPLITS,
    UNLABELLED,
    CorpusMissing,
    families,
    load,
    runs,
    transcript_files,
)
from tests.support.docs import pages as documentation_pages

ROOT = Path(__file__).resolve().parents[1]


def test_the_corpus_is_inside_the_checkout_and_matches_its_manifest():
    assert CORPUS_DIR.is_relative_to(ROOT)
    files = transcript_files()
    manifest = json.loads((CORPUS_DIR / "manifest.json").read_text())
    assert sorted(e["file"] for e in manifest) == [f.name for f in files]
    assert len(files) >= 100
    for entry in manifest:
        assert len(load(CORPUS_DIR / entry["file"])) == entry["messages"], entry["file"]
        # Only permissive sources, recorded with where each run came from.
        assert entry["license"].startswith(("MIT", "Apache-2.0", "BSD")), entry["file"]
        assert entry["source_repo"] and len(entry["commit"]) == 40, entry["file"]
        assert entry["conversion"], entry["file"]


def test_every_run_has_a_family_and_every_family_a_split():
    table = families()
    every = runs()
    assert {r.family for r in every} == set(table)
    assert {f["split"] for f in table.values()} == set(SPLITS)
    assert len(table) >= 8
    # The test split: whole families the engine is not tuned on, enough to mean something.
    test = [r for r in every if r.split == "test"]
    assert len({r.family for r in test}) >= 3 and len(test) >= 30
    # Each way of acting is on both sides, so test measures shapes the engine was made
    # for on other agents, not shapes it never saw.
    shapes = {split: {table[r.family]["shape"].split(", ")[1] for r in every
                      if r.split == split} for split in SPLITS}
    assert shapes["tune"] == shapes["test"] == {"tool calls", "text actions"}


def test_runs_are_chosen_by_split_and_family():
    test = runs(split="test")
    assert test and all(r.split == "test" for r in test)
    tune = runs(split="tune")
    assert not {r.family for r in test} & {r.family for r in tune}
    assert len(test) + len(tune) == len(runs())
    chosen = runs(family=["tau-bench"])
    assert chosen and {r.family for r in chosen} == {"tau-bench"}
    with pytest.raises(ValueError, match="no runs of family nobody"):
        runs(family=["nobody"])
    with pytest.raises(ValueError, match="unknown split"):
        runs(split="train")


def test_a_folder_without_a_manifest_is_one_unlabelled_family(tmp_path):
    (tmp_path / "mine.jsonl").write_text('{"role": "user", "content": "hi"}\n')
    [run] = runs(tmp_path)
    assert (run.family, run.split) == (UNLABELLED, "")
    assert runs(tmp_path, split="test") == []


def test_the_corpus_is_tracked_by_git():
    tracked = subprocess.run(["git", "ls-files", "corpus"], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout.split()
    if not tracked:
        pytest.skip("not a git checkout")
    assert {f"corpus/transcripts/{f.name}" for f in transcript_files()} <= set(tracked)


def test_nothing_reads_from_beside_the_checkout():
    sources = [*ROOT.glob("app/**/*.py"), *ROOT.glob("tests/**/*.py"), *ROOT.glob("scripts/*"),
               ROOT / ".ci" / "run", *documentation_pages()]
    beside = "/".join(["..", "shared"])  # spelled in parts, so this file does not name it
    offenders = [str(p.relative_to(ROOT)) for p in sources if p != Path(__file__)
                 and (beside in p.read_text() or '"shared"' in p.read_text())]
    assert offenders == []


def test_an_empty_folder_says_where_the_corpus_is(tmp_path):
    with pytest.raises(CorpusMissing, match="corpus/transcripts"):
        transcript_files(tmp_path)
