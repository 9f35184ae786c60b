"""Error retention: the informative line of each failed result a compactor cut.

A result failed when it reports a non-zero exit (``<returncode>1</returncode>``,
``exit code 2``), or, when it reports none, when one of its last five lines is
a failure line. Its failure line is the last line that names what went wrong:
a Python exception (``ValueError: bad month``, or a bare ``KeyboardInterrupt``),
pytest's ``FAILED ...`` or ``E   ...`` lines, or a shell or tool error
(``error: ...``, ``fatal: ...``, ``No such file or directory``, ``command not
found``, ``Permission denied``). A bare ``Traceback (most recent call last):``
is never one. Retention is the share of the distinct failure lines of failed
results the output no longer holds verbatim that still occur in the output.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from app.evaluation.seen import Wire, content_text, readable_text

_FAILURE = re.compile(
    r"^\s*(?:[A-Za-z_][\w.]*(?:Error|Exception|Interrupt)(?:: .*|\s*)"
    r"|FAILED .*|E {2,}\S.*|(?:error|fatal|ERROR|FATAL)(?:\[\w+\])?: .*"
    r"|.*(?:No such file or directory|command not found|Permission denied).*)$",
    re.MULTILINE)
_EXIT = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>|exit (?:code|status):? (-?\d+)")


def failure_line(text: str) -> str | None:
    """The last line of a failed ``text`` that says what failed; None if it did not fail
    or no line says."""
    lines = [m.group(0).strip() for m in _FAILURE.finditer(text)]
    lines = [line for line in lines if len(line) >= 8]
    if not lines:
        return None
    code = _EXIT.search(text)
    if code is not None:
        failed = (code.group(1) or code.group(2)) != "0"
    else:
        last_lines = [line.strip() for line in text.strip().splitlines()[-5:]]
        failed = lines[-1] in last_lines
    return lines[-1][:300] if failed else None


class Failures:
    """Failure lines per result text, memoized across the calls of a replay."""

    def __init__(self) -> None:
        self._memo: dict[str, str | None] = {}

    def line(self, text: str) -> str | None:
        if text not in self._memo:
            self._memo[text] = failure_line(text)
        return self._memo[text]

    def cut(self, before: Sequence[Wire], after: Sequence[Wire]) -> set[str]:
        """Failure lines of the input's tool results that the output does not hold whole."""
        kept = {content_text(m.get("content")) for m in after if m.get("role") == "tool"}
        out = set()
        for m in before:
            if m.get("role") != "tool":
                continue
            text = content_text(m.get("content"))
            if text in kept:
                continue
            line = self.line(text)
            if line is not None:
                out.add(line)
        return out


def retained(lines: set[str], after: Sequence[Wire]) -> int:
    """How many of ``lines`` occur in the output's text."""
    if not lines:
        return 0
    text = "\n".join(readable_text(m) for m in after)
    return sum(1 for line in lines if line in text)
