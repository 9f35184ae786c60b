"""How much memory this worker may use: the container's limit, read from its cgroup."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

# cgroup v2, then v1: the first that exists says it.
_LIMIT_FILES = (Path("/sys/fs/cgroup/memory.max"),
                Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"))
# cgroup v1 writes "no limit" as a number near 2**63.
_UNLIMITED = 1 << 60


def container_memory_limit(read: Callable[[Path], str | None] | None = None) -> int | None:
    """The limit in bytes, or None when there is none (or none can be read)."""
    reader = read or _read
    for path in _LIMIT_FILES:
        text = reader(path)
        if text is None:
            continue
        text = text.strip()
        if not text.isdigit():
            return None  # "max": no limit
        value = int(text)
        return value if value < _UNLIMITED else None
    return None


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None
