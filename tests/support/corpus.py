"""The shared real transcripts (``../shared/transcripts`` beside the checkout)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TRANSCRIPTS = ROOT.parent / "shared" / "transcripts"


def transcript_files() -> list[Path]:
    files = sorted(TRANSCRIPTS.glob("*.jsonl"))
    assert len(files) == 31, f"expected the 31 shared transcripts in {TRANSCRIPTS}"
    return files


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def load_named(prefix: str) -> list[dict[str, Any]]:
    return load(next(p for p in transcript_files() if p.name.startswith(prefix)))


def command_at(messages, start):
    """The start of the first bash command at or after ``start``."""
    m = next(m for m in messages[start:] if m.get("tool_calls"))
    command = json.loads(m["tool_calls"][0]["function"]["arguments"])["command"]
    return command.split('"')[0][:30]  # the prompt shows arguments as JSON, quotes escaped
