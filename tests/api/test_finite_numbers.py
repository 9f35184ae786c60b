"""NaN and Infinity are not JSON: every number field of every endpoint answers 422."""

import json
from typing import Any

import pytest

from app.cli import openapi_document

pytestmark = pytest.mark.anyio
DOC = openapi_document()
SCHEMAS = DOC["components"]["schemas"]
BAD = ["NaN", "Infinity", "-Infinity", "1e999"]


def _resolve(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = SCHEMAS[schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def _options(schema: dict[str, Any]) -> list[dict[str, Any]]:
    schema = _resolve(schema)
    return [_resolve(s) for s in schema.get("anyOf", [])] or [schema]


def number_fields(schema: dict[str, Any], example: Any, path: tuple = ()) -> list[tuple]:
    """Paths, in the example body, of every field whose schema allows a number."""
    found = []
    for option in _options(schema):
        if option.get("type") == "number":
            found.append(path)
        for name, sub in option.get("properties", {}).items():
            value = example.get(name) if isinstance(example, dict) else None
            found += number_fields(sub, value if value is not None else {}, (*path, name))
        extra = option.get("additionalProperties")
        if isinstance(extra, dict) and extra:  # a map: one made-up key (a strategy name)
            found += number_fields(extra, {}, (*path, "reactive"))
        if option.get("type") == "array" and isinstance(example, list) and example:
            found += number_fields(option.get("items", {}), example[0], (*path, 0))
    return list(dict.fromkeys(found))


def requests() -> list[tuple[str, dict[str, Any], tuple]]:
    out = []
    for path, operations in DOC["paths"].items():
        body = operations.get("post", {}).get("requestBody")
        if body is None:
            continue
        schema = _resolve(body["content"]["application/json"]["schema"])
        example = schema["examples"][0]
        out += [(path, example, field) for field in number_fields(schema, example)]
    return out


CASES = requests()


def test_the_walk_finds_the_float_fields_of_every_endpoint():
    by_path = {(p, f[-1]) for p, _, f in CASES}
    assert ("/summarize-recall", "score") in by_path
    assert ("/summarize-trace", "min_saving") in by_path
    assert ("/reflect", "duration_ms") in by_path and ("/reflect", "cost") in by_path
    assert {p for p, _ in by_path} >= {"/synthesize", "/compress-history", "/rescue"}
    assert ("/synthesize", ("reasoning", "strategies", "reactive", "synthesis_temperature")) \
        in {(p, f) for p, _, f in CASES}


def _with(example: Any, field: tuple, marker: str) -> Any:
    body = json.loads(json.dumps(example))
    target = body
    for step in field[:-1]:
        target = target.setdefault(step, {}) if isinstance(target, dict) else target[step]
    target[field[-1]] = marker
    return body


@pytest.mark.parametrize("bad", BAD)
@pytest.mark.parametrize(("path", "example", "field"), CASES,
                         ids=[f"{p}:{'/'.join(map(str, f))}" for p, _, f in CASES])
async def test_a_non_finite_number_is_a_422_that_names_the_field(client, path, example, field,
                                                                 bad):
    marker = "__NOT_FINITE__"
    raw = json.dumps(_with(example, field, marker)).replace(f'"{marker}"', bad)
    r = await client.post(path, content=raw, headers={"content-type": "application/json"})
    assert r.status_code == 422, (path, field, r.text)
    problem = r.json()
    pointer = "/" + "/".join(map(str, field))
    assert problem["pointer"] == pointer and bad in problem["detail"]
    assert r.headers["content-type"].startswith("application/problem+json")


async def test_non_finite_numbers_inside_free_form_fields_are_refused_too(client):
    raw = ('{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", '
           '"content": null, "tool_calls": [{"id": "c1", "type": "function", "function": '
           '{"name": "f", "arguments": "{}"}}], "x_meta": {"score": NaN}}]}')
    r = await client.post("/synthesize", content=raw,
                          headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["pointer"] == "/messages/1/x_meta/score"


async def test_finite_numbers_and_the_word_nan_in_text_pass(client):
    body = {"query": "Is NaN or Infinity a number? 1e300 is.", "mode": "extractive",
            "memories": [{"id": "m1", "text": "NaN is not a number; Infinity neither.",
                          "score": 1e300}]}
    r = await client.post("/summarize-recall", json=body)
    assert r.status_code == 200, r.text
