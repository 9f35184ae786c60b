"""JSON written in pieces reads as the value written whole."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from app.adapters.jsoncodec import dumps, dumps_pieces

_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1),
                     st.floats(allow_nan=False, allow_infinity=False), st.text())
_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(), inner, max_size=4)), max_leaves=20)


@given(value=st.one_of(_VALUES, st.dictionaries(st.text(), _VALUES, max_size=5)))
def test_the_pieces_joined_read_as_the_value(value: Any) -> None:
    pieces = list(dumps_pieces(value))
    assert json.loads(b"".join(pieces)) == json.loads(dumps(value))


def test_an_object_of_lists_comes_out_an_item_at_a_time() -> None:
    document = {"handle": "cs_1", "messages": [{"content": "a" * 1000}, {"content": "b"}]}
    pieces = list(dumps_pieces(document))
    assert max(len(p) for p in pieces) < 1100
    assert b"".join(pieces) == dumps(document)


def test_a_value_the_fast_writer_refuses_is_written_by_the_standard_one() -> None:
    document = {"messages": [{"content": "\ud800"}]}  # a lone surrogate
    assert json.loads(b"".join(dumps_pieces(document))) == document
