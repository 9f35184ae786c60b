"""Where a long computation lets other threads run.

The compiled engine holds the interpreter for as long as a step runs: compiled code
never passes the points where CPython hands the lock to a thread that asked for it,
and on a request of megabytes a step lasts hundreds of milliseconds, during which
the event loop (and /healthz) waits even though the work runs in its own thread.
Entering an interpreted function is such a point. This module is left out of the
compiled build on purpose (``setup.py``). The memo calls ``breathe`` before it reads a
large text anew, and the loops that read one a line or a byte at a time call it every
``EVERY_CHARS`` characters or so: a compiled step then holds the lock for a
millisecond or two, and a call costs a tenth of a microsecond.
"""

from __future__ import annotations

# Measured on the largest requests: the slowest of those loops reads about 20 MB a
# second, so this many characters take under 2 ms.
EVERY_CHARS = 1 << 15


def breathe() -> None:
    """Nothing: being interpreted is what it is for."""
