"""A bench run's figures as a file: what it printed, the rows it printed them from, and
the machine it ran on.

``docs/figures/bench.json`` keeps such runs under the name of their kind (``cold`` for
plain ``bench``, ``replay`` for ``bench --replay``, ...), and the docs quote their
figures from there: a test holds every figure a page quotes to what a recorded run
printed (tests/test_docs.py), so a figure retyped by hand cannot drift from the
command's output. Timings depend on the machine, so each run says what it ran on.
"""

from __future__ import annotations

import contextlib
import datetime
import io
import os
import platform
import re
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson


def machine() -> dict[str, Any]:
    """What the figures were measured on: the CPUs this process may run on, their model,
    Python, and whether the engine ran compiled."""
    from app.engine import memo

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"cpus": cpus, "cpu": _cpu_model(), "python": platform.python_version(),
            "engine": "compiled" if not memo.__file__.endswith(".py") else "interpreted"}


def _cpu_model() -> str:
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or platform.machine()
    for line in info.splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.machine()


def record(path: Path, printed: Sequence[str], *, summary: dict[str, Any] | None = None,
           rows: Sequence[dict[str, Any]] | None = None) -> None:
    """Write one run: the command as it was called, the day, the machine, the lines it
    printed (verbatim), and what they were computed from."""
    run: dict[str, Any] = {
        "command": " ".join(["contextsynth", *sys.argv[1:]]) if _called_as_cli()
        else "contextsynth bench",
        "date": datetime.date.today().isoformat(),
        "machine": machine(),
        "printed": "\n".join(printed),
    }
    settings = {name: value for name, value in os.environ.items()
                if name.startswith("CONTEXTSYNTH_") and not _SECRET.search(name)}
    if settings:  # what the run was configured with (CONTEXTSYNTH_PROXY_EXPAND_TOOL, ...)
        run["settings"] = dict(sorted(settings.items()))
    if summary is not None:
        run["summary"] = summary
    if rows is not None:
        run["rows"] = list(rows)
    path.write_bytes(orjson.dumps(run, option=orjson.OPT_INDENT_2) + b"\n")


_SECRET = re.compile(r"KEY|SECRET|TOKEN|PASSWORD|URL|WEBHOOKS|PROVIDERS")


def _called_as_cli() -> bool:
    return bool(sys.argv) and "bench" in sys.argv[1:2]


class _Tee(io.TextIOBase):
    """Standard output that also keeps what was written to it."""

    def __init__(self, out: io.TextIOBase | Any) -> None:
        self.out, self.kept = out, io.StringIO()

    def write(self, text: str) -> int:
        self.kept.write(text)
        return int(self.out.write(text))

    def flush(self) -> None:
        self.out.flush()


@contextlib.contextmanager
def recording(path: Path) -> Iterator[None]:
    """Record what the block prints on stdout (printed still, as it runs) as one run at
    ``path``: how a bench that keeps no rows of its own (``--load``, ``--proxy``,
    ``--largest``, ...) writes ``--json``. Its progress, on stderr, is not kept."""
    tee = _Tee(sys.stdout)
    with contextlib.redirect_stdout(tee):
        yield
    record(path, tee.kept.getvalue().rstrip("\n").splitlines())
