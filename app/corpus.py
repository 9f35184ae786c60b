"""The real agent runs kept in the repository (``corpus/transcripts``).

Tests, ``contextsynth bench`` and ``contextsynth eval`` read them from the
checkout the package was installed from, so they work from any directory and
on a clone with nothing beside it.

Each run belongs to an agent family (its harness and shape: tau-bench support
agents, Aider's text edits, OpenHands CodeAct, ...), named in the manifest, and
each family to one split in ``corpus/families.json``: ``tune`` (what budgets and
heuristics may be chosen on) or ``test`` (what the project reports). Whole
families go to a split, never single runs, so that ``test`` measures agents the
engine was not fitted to.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CORPUS_DIR = Path(__file__).resolve().parents[1] / "corpus" / "transcripts"
FAMILIES_FILE = CORPUS_DIR.parent / "families.json"
SPLITS = ("tune", "test")
# A folder of runs with no manifest (a user's own) is one family of its own.
UNLABELLED = "unlabelled"


class CorpusMissing(FileNotFoundError):
    """The transcripts are not where the command looked."""


@dataclass(frozen=True)
class Run:
    """One transcript file and the family and split it belongs to."""

    path: Path
    family: str
    split: str


def transcript_files(directory: Path | None = None) -> list[Path]:
    """The ``.jsonl`` runs in ``directory`` (default: the repository's corpus), by name."""
    where = CORPUS_DIR if directory is None else directory
    files = sorted(where.glob("*.jsonl"))
    if not files:
        raise CorpusMissing(
            f"no .jsonl transcripts in {where}. The corpus ships in the repository's "
            "corpus/transcripts; run from a checkout (pip install -e .) or pass --dir.")
    return files


def load(path: Path) -> list[dict[str, Any]]:
    """One run: a JSON message per line."""
    text = path.read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def manifest(directory: Path | None = None) -> list[dict[str, Any]]:
    """The manifest's entries (source, license, family, counts), or none for a folder
    without one."""
    path = (CORPUS_DIR if directory is None else directory) / "manifest.json"
    if not path.exists():
        return []
    entries: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    return entries


def families(path: Path = FAMILIES_FILE) -> dict[str, dict[str, Any]]:
    """Each family's split and description, from ``corpus/families.json``."""
    if not path.exists():
        return {}
    table: dict[str, dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))["families"]
    return table


def runs(directory: Path | None = None, split: str | None = None,
         family: Sequence[str] = ()) -> list[Run]:
    """The runs of a folder with their families, optionally of one split or some
    families only. Runs of a folder without a manifest are ``unlabelled`` and belong
    to no split, so asking for a split there finds nothing."""
    if split is not None and split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; choose from {', '.join(SPLITS)}")
    of_file = {e["file"]: e.get("family", UNLABELLED) for e in manifest(directory)}
    split_of = {name: f["split"] for name, f in families().items()}
    found = [Run(p, of_file.get(p.name, UNLABELLED),
                 split_of.get(of_file.get(p.name, UNLABELLED), ""))
             for p in transcript_files(directory)]
    if split is not None:
        found = [r for r in found if r.split == split]
    if family:
        unknown = sorted(set(family) - {r.family for r in found})
        if unknown:
            raise ValueError(f"no runs of family {', '.join(unknown)} here; families: "
                             f"{', '.join(sorted({r.family for r in found}))}")
        found = [r for r in found if r.family in family]
    return found
