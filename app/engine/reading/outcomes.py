"""Did a tool call fail, and what line says so? Read from the result text.

Most formats carry no error flag, so results are read for the markers shells,
Python, HTTP tools and JSON APIs leave. Each result is read once and the
answer memoized: phases, the ledger and the prior-work notes all ask.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from app.engine.memo import CacheUsage, Memo
from app.engine.transcript.model import Message

# A label that says there was no error: Qwen Code's shell tool ends every result with
# "Error: (none)" (then "Exit Code: 0"), which is no failure.
_NONE = r"\s*\(none\)[ \t]*$"
# Markers that open a line.
_LINE_START = re.compile(
    r"^(?:Traceback \(most recent call last\)|[\w.]*(?:Error|Exception)\b(?!:"
    + _NONE + r")|error[:\[](?!" + _NONE + r")|fatal:|FAILED\b|\{\"error\")",
    re.MULTILINE | re.IGNORECASE,
)
# Every line-start marker, lowercased, contains one of these.
_LINE_START_WORDS = ("error", "exception", "traceback", "fatal:", "failed")
# Markers that may sit anywhere in a line.
_ANYWHERE_PHRASES = ("command not found", "No such file or directory", "Permission denied")
_ANYWHERE = re.compile("|".join(map(re.escape, _ANYWHERE_PHRASES)))
_RETURN_CODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>|exit (?:code|status):? (-?\d+)")
# Each of its matches opens with one of these: a text that holds neither has none, which
# str.find tells for a fraction of the scan (the regex tries both at every "<" and "e").
_RETURN_CODE_TAG = "<returncode>"
_RETURN_CODE_WORDS = "exit "
# A shell tool's trailer line ("Exit Code: 1" on a line of its own after what the
# command printed, beside "Signal:" and "Process Group PGID:"). A non-zero one is a
# failure, however far down the output says so; a zero one leaves it to the output, as
# it is the status of a pipeline's last command, and ``pytest | tail`` that failed
# exits 0.
_TRAILER_STATUS = re.compile(r"^Exit Code: (-?\d+)[ \t]*$", re.MULTILINE)
# Lines that say what failed, as the last of them in a result says it best: a raised
# exception's final line, pytest's FAILED and E lines, a shell's or a tool's message.
# "Traceback (most recent call last):" says only that something failed.
_MARKED_FAILURE = (
    r"[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Failure|Warning)(?::.*|\b\s*$)"
    r"|FAILED .+|E {2,}\S.*|ERROR[: ](?!" + _NONE + r").+"
    r"|(?:error|fatal|Error)(?:\[\w+\])?: (?!" + _NONE + r").+")
_FAILURE = re.compile(
    r"^[ \t]*(?:" + _MARKED_FAILURE
    + r"|.*(?:No such file or directory|command not found|Permission denied).*)$",
    re.MULTILINE)
# The same without the phrases (``_ANYWHERE_PHRASES``), for a text that holds none of
# them: that alternative reads every line to its end and back for them, most of the
# scan, and can only match where one occurs (str.find tells first). Same matches.
_FAILURE_MARKED = re.compile(r"^[ \t]*(?:" + _MARKED_FAILURE + r")$", re.MULTILINE)
# A Python traceback's header, and a line that starts unindented: the first such line
# after a traceback's frames is the exception it raised, whatever its name
# (``django.core.exceptions.ImproperlyConfigured: ...`` names no Error).
_TRACEBACK_HEADER = "Traceback (most recent call last):"
# A line that only says a failure follows ("ERROR:", "Error:", "fatal:").
_BARE_LABEL = re.compile(r"\W*\w+(?:\[\w+\])?\s*:\s*")
_UNINDENTED = re.compile(r"^[^\s].*$", re.MULTILINE)
# A traceback frame, to say where in the project a failure happened.
_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+), in (\S+)', re.MULTILINE)
_LIBRARY = ("site-packages", "/lib/python", "<frozen", "<string>", "dist-packages")
_TAIL = 20000
_HEAD = 2000
_SCAN = 20000
# An error line is the one line of a failure a note keeps: kept whole up to this many of
# its own characters (a longer one gets an ellipsis after them).
_LINE_CHARS = 300
# What the service writes is ASCII: "..." and "->" cost the tokens "…" and "→" do, and
# an all-ASCII string is several times cheaper to search, hash, encode and tokenize.
ELLIPSIS = "..."
# The engine's own words in a failure line: the frame it adds, the exception a chain
# started from, what it says of silence.
_AT = " (at "
_CAUSED = " (caused by "
_CAUSE_CHARS = 120
_CHAINED = ("The above exception was the direct cause of the following exception",
            "During handling of the above exception, another exception occurred")
NO_OUTPUT = "no output"


# Made per call, result or span: __init__ is written out so that mypyc compiles it (see
# transcript.Message). Treated as a value.
@dataclass(init=False)
class Outcome:
    error: bool
    line: str  # the error line when it failed, else the first line with content
    # The exception a failed result's chain of tracebacks started from, whole as the
    # result holds it ("" without one, or when longer than a line): ``line`` names it
    # only when both fit.
    cause: str

    def __init__(self, error: bool, line: str, cause: str = "") -> None:
        self.error = error
        self.line = line
        self.cause = cause

    @property
    def unnamed_cause(self) -> str:
        """The cause when ``line`` had no room to name it, else empty."""
        return self.cause if self.cause and _CAUSED not in self.line else ""

    def quoted_lines(self) -> tuple[str, ...]:
        """The lines of a failure the result itself holds, in its order: the exception
        the chain started from, then ``quoted`` of the line. A cut result keeps both:
        what was raised last often only wraps what to act on."""
        own = quoted(self.line)
        return (self.cause, own) if self.cause and self.cause != own else (own,)


def _find_error(text: str) -> re.Match[str] | None:
    head = text[:_SCAN]
    # Most results carry no marker at all; substring tests in C say so for a fraction
    # of what the case-insensitive line scan costs.
    lower = head.lower()
    found = (_LINE_START.search(head) if any(w in lower for w in _LINE_START_WORDS)
             else None)
    other = _ANYWHERE.search(head) if any(p in head for p in _ANYWHERE_PHRASES) else None
    if found is None or (other is not None and other.start() < found.start()):
        return other
    return found


def _line_at(text: str, position: int) -> str:
    start = text.rfind("\n", 0, position) + 1
    end = text.find("\n", position)
    return text[start : end if end >= 0 else len(text)].strip()


def read(text: str, *, flagged: bool = False) -> Outcome:
    error = flagged
    if not error:
        code = _exit_code(text)
        if code is not None:
            error = (code.group(1) or code.group(2)) != "0"
        else:
            error = _failed_status(text) or _find_error(text[:_HEAD]) is not None \
                or _ends_failed(text)
    if not error:
        line = first_line(text)
        if line.startswith(_TRACEBACK_HEADER):
            # It exited 0, yet what it printed is a traceback (a script that reports
            # its own failure): its header says nothing, the exception it raised does.
            raised = failure_line(text)
            line = line if raised.startswith(NO_OUTPUT) else raised
        return Outcome(False, line)
    return Outcome(True, *_failure(text))


def _exit_code(text: str) -> re.Match[str] | None:
    """The exit status a harness reported: at the start (``<returncode>``), or at the end
    of what the command printed (OpenHands' ``[Command finished with exit code 1]``), the
    last one there."""
    head = text[:_HEAD]
    found = _RETURN_CODE.search(head) if _may_hold_code(head, 0) else None
    if found is not None or len(text) <= _HEAD:
        return found
    end = len(text) - _HEAD
    if not _may_hold_code(text, end):
        return None
    found_at_end = list(_RETURN_CODE.finditer(text, end))
    return found_at_end[-1] if found_at_end else None


def _ends_failed(text: str) -> bool:
    """Whether a long result's last line says it failed (a package runner's ``error:
    script "x" exited with code 1`` after a report the command printed): what a command
    prints last is its verdict, however far below its head the output runs."""
    if len(text) <= _HEAD:
        return False  # its head was read whole above
    return _FAILURE.fullmatch(last_line(text[-_LINE_CHARS * 2:])) is not None


def _may_hold_code(text: str, start: int) -> bool:
    """Whether ``text`` from ``start`` on holds an opening of ``_RETURN_CODE``."""
    return text.find(_RETURN_CODE_TAG, start) >= 0 or text.find(_RETURN_CODE_WORDS, start) >= 0


def _failed_status(text: str) -> bool:
    """Whether the trailer a shell tool ends its result with reports a non-zero status."""
    if "Exit Code: " not in text:
        return False
    found = list(_TRAILER_STATUS.finditer(text, max(len(text) - _HEAD, 0)))
    return bool(found) and found[-1].group(1) != "0"


def failure_line(text: str) -> str:
    """What a failed result says went wrong, in a line: its last failure line (with the
    deepest traceback frame in the project's own files), else its first marked line,
    else its first line; ``no output`` (and the exit code) when it is empty."""
    return _failure(text)[0]


def _failure(text: str) -> tuple[str, str]:
    """``failure_line`` and the exception its chain started from (see Outcome.cause)."""
    tail = text[-_TAIL:]
    lines = _FAILURE if any([p in tail for p in _ANYWHERE_PHRASES]) else _FAILURE_MARKED
    matches = [(m.start(), m.group(0)) for m in lines.finditer(tail)]
    raised = _raised(tail, tail.rfind(_TRACEBACK_HEADER))
    if raised is not None and (not matches or raised[0] > matches[-1][0]):
        matches.append(raised)
    if matches:
        start, failure = matches[-1]
        line = shorten(failure.strip(), _LINE_CHARS + len(ELLIPSIS))
        frame = _project_frame(tail[:start])
        if frame and len(line) + len(frame) + len(_AT) + 1 <= _LINE_CHARS:
            line = f"{line}{_AT}{frame})"
        cause = _cause(tail, failure.strip())
        short = shorten(cause, _CAUSE_CHARS)
        if cause and len(line) + len(short) + len(_CAUSED) + 1 <= _LINE_CHARS:
            line = f"{line}{_CAUSED}{short})"
        # A cut keeps the cause whole in its middle: only one of a line's length.
        return line, cause if len(cause) <= _LINE_CHARS else ""
    found = _find_error(text)
    # With no marked line, a failed command says why at its end ("patch: **** malformed
    # patch at line 39"), after what it printed while it worked ("patching file a.py").
    line = _line_at(text, found.start()) if found is not None else last_line(text)
    if found is not None and _BARE_LABEL.fullmatch(line):
        # "ERROR:" alone on its line: the reason is on the next ("No replacement was
        # performed, old_str `x` did not appear verbatim in a.py.").
        line = _next_line(text, found.start()) or line
    if line.startswith(_TRACEBACK_HEADER[:-1]):
        line = ""
    if not line or _RETURN_CODE.fullmatch(line):
        code = _RETURN_CODE.search(text[:_HEAD])
        status = (code.group(1) or code.group(2)) if code is not None else None
        return (f"{NO_OUTPUT}, exit {status}" if status else NO_OUTPUT), ""
    return shorten(line, _LINE_CHARS + len(ELLIPSIS)), ""


def _next_line(text: str, position: int) -> str:
    """The first line with content after the line at ``position``; empty if none."""
    end = text.find("\n", position)
    while end >= 0:
        start, end = end + 1, text.find("\n", end + 1)
        line = text[start : end if end >= 0 else len(text)].strip()
        if line:
            return line
    return ""


def _raised(text: str, at: int) -> tuple[int, str] | None:
    """Where the exception line that ends the traceback whose header is at ``at``
    starts, and the line; None without one (``at`` < 0), or with nothing after its
    frames."""
    if at < 0:
        return None
    for found in _UNINDENTED.finditer(text, at + len(_TRACEBACK_HEADER)):
        line = found.group(0).strip()
        if line and not _bare_tag(line):
            return found.start(), line
    return None


def _cause(text: str, final: str) -> str:
    """The exception a chain of tracebacks started from, when the last one was raised
    while handling it ("During handling of the above exception") or from it; empty
    otherwise. The first is often what to act on: django's ``ImproperlyConfigured:
    'django.db.backends.dummy' isn't an available database backend`` was raised by
    ``ModuleNotFoundError: No module named 'sqlparse'``."""
    first = text.find(_TRACEBACK_HEADER)
    if first < 0 or first == text.rfind(_TRACEBACK_HEADER):
        return ""
    raised = _raised(text, first)
    # A wrapper that says the same again (django.db.utils.OperationalError around
    # sqlite3.OperationalError, one message) has no cause worth the room.
    if raised is None or raised[1].split(": ", 1)[-1] == final.split(": ", 1)[-1]:
        return ""
    after = text[raised[0] : text.find(_TRACEBACK_HEADER, raised[0])]
    if not any(link in after for link in _CHAINED):
        return ""  # two tracebacks, one after the other: the last says what failed
    return raised[1]


def quoted(line: str) -> str:
    """What of a failure line the result itself says: without the frame and the cause
    this module adds, and empty for its "no output" (nothing in the result says that)."""
    if line.startswith(NO_OUTPUT):
        return ""
    return line.split(_AT, 1)[0].split(_CAUSED, 1)[0]


def _project_frame(text: str) -> str:
    """``path:line in function`` of the deepest frame outside libraries, if any."""
    found = ""
    for frame in _FRAME.finditer(text[-_TAIL:]):
        path = frame.group(1)
        if not any(marker in path for marker in _LIBRARY):
            found = f"{short_path(path)}:{frame.group(2)} in {frame.group(3)}"
    return found


def short_path(path: str, keep: int = 3) -> str:
    """A path with its middle shortened, keeping the file name and the folders above it
    up to ``keep`` parts: ``/testbed/django/db/migrations/state.py`` becomes
    ``.../db/migrations/state.py``."""
    sep = "\\" if "\\" in path and "/" not in path else "/"
    parts = path.split(sep)
    if len(parts) <= keep + 1:
        return path
    return ELLIPSIS + sep + sep.join(parts[-keep:])


def _read_unflagged(text: str) -> Outcome:
    return read(text)


class Outcomes:
    def __init__(self, *, cache_bytes: int = 16 << 20) -> None:
        self._memo: Memo[str, Outcome] = Memo(cache_bytes, fingerprinted=True)

    @property
    def usage(self) -> CacheUsage:
        return self._memo.usage

    def of(self, message: Message) -> Outcome:
        if message.is_error:  # the format said so; only the line is left to find
            return read(message.text, flagged=True)
        return self._memo.get(message.text, _read_unflagged)


def first_line(text: str) -> str:
    """First line with content, skipping bare wrapper tags such as ``<output>``."""
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        if end < 0:
            end = len(text)
        line = text[start:end].strip()
        if line and not _bare_tag(line):
            return line
        start = end + 1
    return ""


def last_line(text: str) -> str:
    """Last line with content, skipping bare wrapper tags such as ``</output>`` and the
    exit status a wrapper reports."""
    end = len(text)
    while end > 0:
        start = text.rfind("\n", 0, end) + 1
        line = text[start:end].strip()
        if line and not _bare_tag(line) and not _RETURN_CODE.fullmatch(line):
            return line
        end = start - 1
    return ""


def _bare_tag(line: str) -> bool:
    return line[0] == "<" and line[-1] == ">" and " " not in line


def shorten(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: max(limit - len(ELLIPSIS), 0)] + ELLIPSIS
