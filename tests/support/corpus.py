"""The real transcripts kept in the repository (``corpus/transcripts``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from app import corpus
from app.corpus import load

TRANSCRIPTS = corpus.CORPUS_DIR


def transcript_files() -> list[Path]:
    files = corpus.transcript_files()
    assert len(files) >= 100, f"expected the corpus's transcripts in {TRANSCRIPTS}"
    return files


def load_named(prefix: str) -> list[dict[str, Any]]:
    return load(next(p for p in transcript_files() if p.name.startswith(prefix)))


def command_at(messages, start):
    """The start of the first bash command at or after ``start``."""
    m = next(m for m in messages[start:] if m.get("tool_calls"))
    command = json.loads(m["tool_calls"][0]["function"]["arguments"])["command"]
    return command.split('"')[0][:30]  # the prompt shows arguments as JSON, quotes escaped
