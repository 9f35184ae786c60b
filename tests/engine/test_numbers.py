"""``holds_float``: the request path's test for a body whose numbers orjson may have
changed (an integer past 64 bits becomes a float)."""

from __future__ import annotations

from app.engine.transcript.formats.numbers import holds_float


def test_a_float_deep_in_a_conversation_is_found():
    body = {"messages": [{"role": "user", "content": "hi"},
                         {"role": "tool", "content": [{"type": "json", "value": {
                             "rows": [1, 2, {"price": 12.5}]}}]}]}
    assert holds_float(body)
    assert holds_float(1.8446744073709552e19)


def test_text_integers_booleans_and_nulls_are_not_floats():
    body = {"messages": [{"role": "tool", "content": "3.14 and 123456789012345678901234"}],
            "max": 9_223_372_036_854_775_807, "steer": True, "format": None, "tags": []}
    assert not holds_float(body)
    assert not holds_float("1.5")
