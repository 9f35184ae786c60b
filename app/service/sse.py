"""Server-sent events read incrementally, as the WHATWG HTML standard's event-stream
parser reads them (section 9.2.6): lines end in CRLF, LF or a lone CR, and a CR that
ends one read may be the first half of a CRLF whose LF starts the next; a leading
byte order mark is dropped; ``:`` starts a comment; ``data`` lines join with LF;
``event``, ``id`` and ``retry`` set what the standard says they set.

An event is given out the moment the blank line that ends it is read, whatever the
reads were cut at: a proxy that waits for more bytes holds the client's answer back.

The decoder gives every block of lines, not only those the standard dispatches (a
block of comments keeps a connection alive; an ``id`` alone moves the last event id):
a proxy passes each on as it came, and acts on the data of the dispatched ones.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable
from dataclasses import dataclass

_EOL = re.compile(r"\r\n|\r|\n")
_BOM = "\ufeff"


@dataclass(frozen=True, slots=True)
class Event:
    """One block of lines ended by a blank line (or, last, by the end of the stream)."""

    data: str  # the data lines, joined with LF
    type: str  # "message" unless an ``event`` line named it
    id: str  # the stream's last event id as of this event ("" until one is set)
    retry: int | None  # a reconnection time this block set, in milliseconds
    dispatched: bool  # the standard gives it to a listener: it had a data line, and ended
    raw: bytes  # its lines as read, with LF line ends, and the blank line that ended it


class EventDecoder:
    """Feed it bytes as they arrive; it answers the events each read completed."""

    def __init__(self) -> None:
        self._text = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._started = False  # the first character was read (a BOM there is dropped)
        self._after_cr = False  # the last read ended in CR: an LF next ends no line
        self._pending: list[str] = []  # the line being read, in pieces
        self._lines: list[str] = []  # the lines of the event being read
        self._data: list[str] = []
        self._type = ""
        self._id = ""
        self._retry: int | None = None

    def feed(self, chunk: bytes) -> list[Event]:
        return self._read(self._text.decode(chunk))

    def end(self) -> list[Event]:
        """What the stream's last bytes held: the events they ended, then the block that
        no blank line ended, if any (the standard drops it: it is never dispatched)."""
        events = self._read(self._text.decode(b"", final=True))
        if self._pending:
            self._line("".join(self._pending))
            self._pending = []
        if self._lines:
            events.append(self._take(ended=False))
        return events

    def _read(self, text: str) -> list[Event]:
        if not text:
            return []
        if not self._started:
            self._started = True
            if text.startswith(_BOM):
                text = text[1:]
        if self._after_cr and text.startswith("\n"):
            text = text[1:]
        self._after_cr = False
        events: list[Event] = []
        start = 0
        for end in _EOL.finditer(text):
            self._pending.append(text[start:end.start()])
            line = "".join(self._pending)
            self._pending = []
            start = end.end()
            if line:
                self._line(line)
            elif self._lines:  # a blank line: the event it ends goes out now
                events.append(self._take(ended=True))
        if start < len(text):
            self._pending.append(text[start:])
        elif text.endswith("\r"):
            self._after_cr = True
        return events

    def _line(self, line: str) -> None:
        self._lines.append(line)
        if line.startswith(":"):
            return  # a comment
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        field = _FIELDS.get(name)
        if field is not None:  # any other field is ignored, as the standard says
            field(self, value)

    def _set_data(self, value: str) -> None:
        self._data.append(value)

    def _set_type(self, value: str) -> None:
        self._type = value

    def _set_id(self, value: str) -> None:
        if "\0" not in value:  # the standard ignores an id with a NUL in it
            self._id = value

    def _set_retry(self, value: str) -> None:
        if value.isascii() and value.isdigit():
            self._retry = int(value)

    def _take(self, *, ended: bool) -> Event:
        raw = "\n".join(self._lines) + ("\n\n" if ended else "\n")
        event = Event("\n".join(self._data), self._type or "message", self._id, self._retry,
                      ended and bool(self._data), raw.encode())
        self._lines, self._data, self._type, self._retry = [], [], "", None
        return event


_FIELDS: dict[str, Callable[[EventDecoder, str], None]] = {
    "data": EventDecoder._set_data, "event": EventDecoder._set_type,
    "id": EventDecoder._set_id, "retry": EventDecoder._set_retry}
