"""The real agent runs kept in the repository (``corpus/transcripts``).

Tests, ``contextsynth bench`` and ``contextsynth eval`` read them from the
checkout the package was installed from, so they work from any directory and
on a clone with nothing beside it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CORPUS_DIR = Path(__file__).resolve().parents[1] / "corpus" / "transcripts"


class CorpusMissing(FileNotFoundError):
    """The transcripts are not where the command looked."""


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
