"""Request bodies a hostile or broken client sends: each kind by name, as bytes."""

from __future__ import annotations

import json
from collections.abc import Mapping


def _nested(levels: int, opening: str = "[", closing: str = "]") -> str:
    return opening * levels + closing * levels


def _chat(*messages: Mapping[str, object]) -> bytes:
    return json.dumps({"messages": list(messages)}).encode()


def _call(arguments: str, result: str) -> list[dict[str, object]]:
    return [{"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function",
                 "function": {"name": "run", "arguments": arguments}}]},
            {"role": "tool", "tool_call_id": "c1", "content": result}]


_USER = b'{"messages":[{"role":"user","content":"hi"}]'

# Kinds whose answer is fixed: (status, problem type).
REFUSED: dict[str, tuple[bytes, int, str]] = {
    "array nested 1,000 deep": (_nested(1000).encode(), 400, "nested-too-deep"),
    "array nested 100,000 deep": (_nested(100_000).encode(), 400, "nested-too-deep"),
    "object nested 5,000 deep": (('{"a":' * 5000 + "1" + "}" * 5000).encode(), 400,
                                 "nested-too-deep"),
    "content nested 3,000 deep": (
        b'{"messages":[{"role":"user","content":' + _nested(3000).encode() + b"}]}", 400,
        "nested-too-deep"),
    "a field nested 200 deep": (
        _USER + b',"metadata":' + ('{"a":' * 200 + "1" + "}" * 200).encode() + b"}", 400,
        "nested-too-deep"),
    "invalid UTF-8 in a string": (
        b'{"messages":[{"role":"user","content":"caf\xc3 \xff\xfe"}]}', 400, "invalid-utf8"),
    "bytes that are not UTF-8": (b"\xff\xfe\xfd\x00", 400, "invalid-utf8"),
    "UTF-16 text": ('{"messages":[]}'.encode("utf-16"), 400, "invalid-utf8"),
    "an integer of 5,000 digits": (_USER + b',"n":' + b"9" * 5000 + b"}", 422,
                                   "invalid-number"),
    "NaN": (_USER + b',"n":NaN}', 422, "invalid-number"),
    "an overflowing exponent": (_USER + b',"n":1e99999}', 422, "invalid-number"),
    "cut short": (b'{"messages":[{"role":"us', 400, "malformed-json"),
    "not JSON": (b"messages: [hi]", 400, "malformed-json"),
    "trailing garbage": (_USER + b"}}}", 400, "malformed-json"),
}

# Kinds the service may take or refuse, as the endpoint's schema says, but never
# with a 5xx.
ODD: dict[str, bytes] = {
    "null": b"null", "a number": b"1", "a string": b'"hi"', "an array": b"[]",
    "messages null": b'{"messages":null}',
    "messages of numbers": b'{"messages":[1,2,3]}',
    "a byte order mark": b"\xef\xbb\xbf" + _USER + b"}",
    "a lone surrogate": b'{"messages":[{"role":"user","content":"\\ud800 x"}]}',
    "escaped NUL and control characters": _chat(
        {"role": "user", "content": "".join(chr(i) for i in range(32)) * 50}),
    "a duplicate key": b'{"messages":[],"messages":[{"role":"user","content":"x"}]}',
    "text in a nested text field": (
        b'{"messages":[{"role":"user","content":[{"type":"text","text":{"a":{"b":1}}}]}]}'),
    "a tool call of wrong types": (
        b'{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":1,'
        b'"function":{"name":[],"arguments":{}}}]}]}'),
    "arguments nested 5,000 deep in a string": _chat(
        *_call(_nested(5000), '{"a":' * 900 + "1" + "}" * 900)),
    "results nested 990 deep in strings": _chat(*_call(_nested(500), _nested(990)) * 3),
    "anthropic blocks of wrong types": json.dumps({"messages": [{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": 5,
         "content": [{"type": "text", "text": None}]}]}]}).encode(),
    "gemini parts of wrong types": json.dumps({"contents": [{"role": "model", "parts": [
        {"functionCall": {"name": 1, "args": []}}]}]}).encode(),
    "responses items of wrong types": json.dumps({"input": [
        {"type": "function_call_output", "call_id": None, "output": {"x": 1}}]}).encode(),
    "4,000 empty messages": _chat(*[{"role": "user", "content": ""}] * 4000),
    "a key of 100,000 characters": b'{"' + b"k" * 100_000 + b'":1,' + _USER[1:] + b"}",
    "content a number": b'{"messages":[{"role":"user","content":12}]}',
    "a role of NUL": b'{"messages":[{"role":"\\u0000","content":"x"}]}',
    "a memory nested in strings": json.dumps({"query": "x", "memories": [
        {"id": "m1", "text": _nested(2000)}]}).encode(),
    "a history of deep calls": json.dumps({"history": [{"calls": [
        {"tool": _nested(2000), "input": _nested(2000)}]}]}).encode(),
}
