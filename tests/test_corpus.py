"""The corpus lives in the repository: a clone needs nothing beside it."""

import json
import subprocess
from pathlib import Path

import pytest

from app.corpus import CORPUS_DIR, CorpusMissing, load, transcript_files

ROOT = Path(__file__).resolve().parents[1]


def test_the_corpus_is_inside_the_checkout_and_matches_its_manifest():
    assert CORPUS_DIR.is_relative_to(ROOT)
    files = transcript_files()
    manifest = json.loads((CORPUS_DIR / "manifest.json").read_text())
    assert sorted(e["file"] for e in manifest) == [f.name for f in files]
    assert len(files) == 31
    for entry in manifest:
        assert len(load(CORPUS_DIR / entry["file"])) == entry["messages"], entry["file"]
        assert entry["license"].startswith("MIT")


def test_the_corpus_is_tracked_by_git():
    tracked = subprocess.run(["git", "ls-files", "corpus"], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout.split()
    if not tracked:
        pytest.skip("not a git checkout")
    assert {f"corpus/transcripts/{f.name}" for f in transcript_files()} <= set(tracked)


def test_nothing_reads_from_beside_the_checkout():
    sources = [*ROOT.glob("app/**/*.py"), *ROOT.glob("tests/**/*.py"), *ROOT.glob("scripts/*"),
               ROOT / ".ci" / "run", ROOT / "README.md"]
    beside = "/".join(["..", "shared"])  # spelled in parts, so this file does not name it
    offenders = [str(p.relative_to(ROOT)) for p in sources if p != Path(__file__)
                 and (beside in p.read_text() or '"shared"' in p.read_text())]
    assert offenders == []


def test_an_empty_folder_says_where_the_corpus_is(tmp_path):
    with pytest.raises(CorpusMissing, match="corpus/transcripts"):
        transcript_files(tmp_path)
