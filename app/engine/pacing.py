"""Where a long computation lets other threads run.

The compiled engine holds the interpreter for as long as a step runs: compiled code
never passes the points where CPython hands the lock to a thread that asked for it,
and on a request of megabytes a step lasts hundreds of milliseconds, during which
the event loop (and /healthz) waits even though the work runs in its own thread.
Entering an interpreted function is such a point. This module is left out of the
compiled build on purpose (``setup.py``), and the memo calls ``breathe`` before it
reads a large text anew: a few microseconds per megabyte read.
"""

from __future__ import annotations


def breathe() -> None:
    """Nothing: being interpreted is what it is for."""
