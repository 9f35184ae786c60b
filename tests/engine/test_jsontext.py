"""JSON text inside a transcript is read with a bound on nesting."""

import pytest

from app.engine import jsontext


def test_text_nested_past_the_bound_is_not_json():
    assert jsontext.loads('{"a": [1, {"b": 2}]}') == {"a": [1, {"b": 2}]}
    for levels in (jsontext.MAX_DEPTH + 1, 900, 50_000):  # 50,000: the parser's own limit
        with pytest.raises(ValueError, match="nested too deep"):
            jsontext.loads("[" * levels + "]" * levels)
    wide = "[" + ",".join(["[1]"] * 5000) + "]"  # many brackets, two levels
    assert len(jsontext.loads(wide)) == 5000


def test_depth_is_measured_without_recursion():
    value: list[object] = []
    for _ in range(100_000):
        value = [value]
    assert jsontext.deeper_than(value, 64)
    assert not jsontext.deeper_than({"a": [{"b": 1}]}, 3)
    assert jsontext.deeper_than({"a": [{"b": []}]}, 3)
