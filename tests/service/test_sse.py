"""Server-sent events read as the WHATWG standard reads them, however the bytes are cut:
every line ending it allows, a CR and its LF in different reads, comments, multi-line
data, event, id, retry and a byte order mark; each event out as soon as its blank line
is read."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st

from app.service.sse import Event, EventDecoder

EOLS = ("\r\n", "\n", "\r")


@dataclass
class Written:
    """A stream as written, with what a reader of the standard must make of it."""

    raw: bytes
    expected: list[tuple[str, str, str, bool]]  # (data, type, id, dispatched)
    ends: list[int]  # where each event's blank line is complete, in bytes


# Values never hold a line end; they hold a colon, spaces and characters that take
# several bytes in UTF-8, so cuts fall inside them.
VALUES = st.text(alphabet=st.sampled_from(list("ab :\t{}\"é€😀")), max_size=8)
LINES = st.one_of(
    st.tuples(st.just("data"), VALUES), st.tuples(st.just("event"), VALUES),
    st.tuples(st.just("id"), VALUES), st.tuples(st.just("retry"), st.sampled_from(
        ["1000", "x1", ""])),
    st.tuples(st.just(":"), VALUES), st.tuples(st.just("other"), VALUES),
    st.tuples(st.just("data-bare"), st.just("")))


@st.composite
def streams(draw: st.DrawFn) -> Written:
    text = "\ufeff" if draw(st.booleans()) else ""
    expected: list[tuple[str, str, str, bool]] = []
    ends: list[int] = []
    last_id = ""
    for lines in draw(st.lists(st.lists(LINES, min_size=1, max_size=5), max_size=6)):
        data: list[str] = []
        kind = ""
        for field, value in lines:
            space = " " if draw(st.booleans()) else ""  # one leading space is dropped
            if field == ":":
                line = ":" + value
            elif field == "data-bare":
                line = "data"  # a field without a colon: an empty value
                data.append("")
            else:
                line = f"{field}:{space}{value}"
                value = (space + value).removeprefix(" ")
                if field == "data":
                    data.append(value)
                elif field == "event":
                    kind = value
                elif field == "id":
                    last_id = value
            text += line + draw(st.sampled_from(EOLS))
        # After a CR, an LF would be the rest of that line end, not a blank line.
        blank = draw(st.sampled_from(EOLS if not text.endswith("\r") else ("\r\n", "\r")))
        # The blank line is complete with its first character: a CR does not wait for LF.
        ends.append(len((text + blank[0]).encode()))
        text += blank
        expected.append(("\n".join(data), kind or "message", last_id, bool(data)))
    return Written(text.encode(), expected, ends)


def _seen(events: list[Event]) -> list[tuple[str, str, str, bool]]:
    return [(e.data, e.type, e.id, e.dispatched) for e in events]


def _cut(raw: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(raw) + 1) for c in cuts})
    return [raw[a:b] for a, b in zip([0, *points], [*points, len(raw)], strict=True)]


@given(streams(), st.lists(st.integers(0, 10_000), max_size=40))
def test_any_cut_of_a_stream_reads_as_the_standard_reads_it_whole(written, cuts):
    decoder = EventDecoder()
    got = [e for chunk in _cut(written.raw, cuts) for e in decoder.feed(chunk)]
    got += decoder.end()
    whole = EventDecoder()
    assert _seen(got) == _seen(whole.feed(written.raw) + whole.end()) == written.expected


@given(streams(), st.lists(st.integers(0, 10_000), max_size=40))
def test_an_event_comes_out_once_its_blank_line_is_read(written, cuts):
    decoder, read, out = EventDecoder(), 0, 0
    for chunk in _cut(written.raw, cuts):
        out += len(decoder.feed(chunk))
        read += len(chunk)
        # every event whose blank line has arrived is out, and none whose has not
        assert out == sum(1 for end in written.ends if end <= read)


def test_a_crlf_cut_between_its_cr_and_lf_ends_one_line_not_two():
    decoder = EventDecoder()
    assert _seen(decoder.feed(b"data: a\r")) == []
    assert _seen(decoder.feed(b"\ndata: b\r\n\r")) == [("a\nb", "message", "", True)]
    assert decoder.feed(b"\n") == []  # the LF of the blank line's CRLF: no second event
    assert _seen(decoder.feed(b"data: c\r\r")) == [("c", "message", "", True)]


def test_cr_only_streams_have_events():
    decoder = EventDecoder()
    got = decoder.feed(b"event: ping\rdata: {}\r\rdata: [DONE]\r\r")
    assert _seen(got) == [("{}", "ping", "", True), ("[DONE]", "message", "", True)]


def test_fields_as_the_standard_reads_them():
    decoder = EventDecoder()
    got = decoder.feed(
        b"\xef\xbb\xbfdata:  two spaces\n"  # BOM dropped; one space dropped, not two
        b": a comment\n"
        b"id: 7\nretry: 250\nretry: soon\n"  # a retry that is not digits is ignored
        b"data\n\n"  # a field without a colon has an empty value
        b"id: x\x00y\n\n"  # an id with NUL is ignored; no data: not dispatched
        b"data: next\n\n")
    assert [(e.data, e.id, e.retry, e.dispatched) for e in got] == [
        (" two spaces\n", "7", 250, True), ("", "7", None, False), ("next", "7", None, True)]
    assert got[0].raw == b"data:  two spaces\n: a comment\nid: 7\nretry: 250\nretry: soon\n" \
        b"data\n\n"


def test_a_block_no_blank_line_ended_is_given_at_the_end_but_not_dispatched():
    decoder = EventDecoder()
    assert decoder.feed(b"data: [DONE]\n\ndata: cut") == [Event(
        "[DONE]", "message", "", None, True, b"data: [DONE]\n\n")]
    [last] = decoder.end()
    assert (last.data, last.dispatched, last.raw) == ("cut", False, b"data: cut\n")
