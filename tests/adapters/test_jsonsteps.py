"""A large body read a piece at a time reads as it does whole, and lets the event loop
run while it is read."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.adapters.jsoncodec import UNREAD, loads_fast
from app.adapters.jsonsteps import loads_in_steps
from app.engine.errors import NestedTooDeep

_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70),
                     st.floats(allow_nan=False, allow_infinity=False),
                     st.text(alphabet=st.sampled_from('ab"\\/\n\t{}[],: é\u2028')))
_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=5), inner, max_size=4)),
    max_leaves=16)
_BODIES = st.dictionaries(st.text(max_size=6), _VALUES, max_size=5)


def _steps(body: bytes, max_depth: int | None = None) -> Any:
    return asyncio.run(loads_in_steps(body, max_depth, whole_up_to=0))


def _same(body: bytes, max_depth: int | None = None) -> None:
    """Read in steps, the body gives what it gives whole: the same NestedTooDeep, the
    same value, or UNREAD where the standard parser must read it. A piece is checked for
    orjson's changes on its own, so a float in one piece beside a long run of digits in
    another is read in steps where whole it goes to the standard parser: the value
    must then be the standard parser's."""
    try:
        expected: Any = loads_fast(body, max_depth)
    except NestedTooDeep:
        with pytest.raises(NestedTooDeep):
            _steps(body, max_depth)
        return
    found = _steps(body, max_depth)
    if expected is UNREAD and found is not UNREAD:
        expected = json.loads(body)
    assert (found is UNREAD) == (expected is UNREAD)
    if expected is not UNREAD:
        assert found == expected


@settings(max_examples=300, deadline=None)
@given(value=_BODIES, indent=st.booleans())
def test_any_object_reads_as_it_does_whole(value, indent):
    body = json.dumps(value, indent=2 if indent else None).encode()
    _same(body)
    _same(body, max_depth=3)


@settings(max_examples=500, deadline=None)
@given(value=_BODIES, cut=st.integers(0, 400), byte=st.sampled_from(b' ,:[]{}"\\x0'))
def test_a_body_broken_anywhere_reads_as_it_does_whole(value, cut, byte):
    body = bytearray(json.dumps(value).encode())
    at = cut % (len(body) + 1)
    _same(bytes(body[:at] + bytes([byte]) + body[at:]))
    _same(bytes(body[:at] + body[at + 1:]))


@pytest.mark.parametrize("body", [
    b'[1, 2]', b'"text"', b'null', b'{"a": 1} x', b'{"a": [1,]}', b'{"a": 1,}', b'{"a" 1}',
    b'{"a": "\\ud800"}', b'{"a": [' * 2000 + b']' * 2000 + b'}', b'  {"a": {"b": [1]}}  ',
    b'{"a": 1, "a": [2]}', b'{"n": 123456789012345678901234, "f": 1.5}', b'{}', b' { } '])
def test_bodies_at_the_edges_read_as_they_do_whole(body):
    _same(body)
    _same(body, max_depth=8)


def _read_beside_a_ticker(body: bytes) -> tuple[Any, int]:
    """The body read in steps, and how often the event loop ran meanwhile."""

    async def read_beside_a_ticker() -> tuple[Any, int]:
        ticks = 0
        done = asyncio.Event()

        async def tick() -> None:
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await asyncio.sleep(0)

        ticker = asyncio.create_task(tick())
        value = await loads_in_steps(body)
        done.set()
        await ticker
        return value, ticks

    return asyncio.run(read_beside_a_ticker())


def test_a_large_body_lets_the_event_loop_run_while_it_is_read():
    messages = [{"role": "tool", "content": f"line {n}\n" * 20_000} for n in range(40)]
    body = orjson.dumps({"model": "m", "messages": messages})
    assert len(body) > 4 << 20
    value, ticks = _read_beside_a_ticker(body)
    assert value == orjson.loads(body)
    assert ticks >= 10  # the loop ran between pieces, not once the body was read


def test_a_list_of_many_short_items_lets_the_event_loop_run_every_few_hundred():
    # 100,000 actions of a line each: each item costs its cut and checks, whatever its
    # bytes, and turning only every 256 KB held the loop 60 ms a turn.
    actions = [{"action": "bash", "observation": f"line {n}"} for n in range(40_000)]
    body = orjson.dumps({"actions": actions})
    assert 1 << 20 < len(body) < 2 << 20  # read in steps; eight, were they counted in bytes
    value, ticks = _read_beside_a_ticker(body)
    assert value == orjson.loads(body)
    assert ticks >= 40_000 // 256
