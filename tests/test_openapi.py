import importlib
import itertools
import pkgutil
from pathlib import Path

import jsonschema
import pytest
import yaml
from pydantic import BaseModel, ValidationError

from app.cli import openapi_document

SPEC = Path(__file__).resolve().parents[1] / "openapi.yaml"


def test_openapi_yaml_matches_the_app():
    committed = yaml.safe_load(SPEC.read_text())
    assert committed == openapi_document(), (
        "openapi.yaml is stale: regenerate it with `contextsynth openapi`")


def test_contract_documents_examples_and_problems():
    doc = openapi_document()
    op = doc["paths"]["/synthesize"]["post"]
    assert set(op["responses"]) >= {"200", "400", "413", "422", "503"}
    request = doc["components"]["schemas"]["SynthesizeRequest"]
    assert request["examples"][0]["messages"][0]["role"] == "system"


def _examples() -> list[tuple[str, int, dict]]:
    doc = openapi_document()
    found = []
    for path, operations in doc["paths"].items():
        body = operations.get("post", {}).get("requestBody")
        if body is None:
            continue
        ref = body["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
        for n, example in enumerate(doc["components"]["schemas"][ref].get("examples", [])):
            found.append((path, n, example))
    return found


def test_every_job_documents_an_example():
    paths = {path for path, _, _ in _examples()}
    assert paths == {"/synthesize", "/compress-history", "/summarize-trace", "/rescue",
                     "/summarize-recall", "/reflect"}


@pytest.mark.anyio
@pytest.mark.parametrize(("path", "n", "example"), _examples(), ids=lambda v: str(v)[:30])
async def test_every_documented_example_is_accepted(client, path, n, example):
    r = await client.post(path, json=example)
    assert r.status_code == 200, r.text


def test_operations_are_named_and_keys_are_a_bearer_scheme():
    spec = yaml.safe_load(SPEC.read_text())
    operations = {op["operationId"] for path in spec["paths"].values() for op in path.values()}
    assert {"synthesize", "compress_history", "summarize_trace", "rescue", "expand",
            "summarize_recall", "reflect"} <= operations
    assert spec["components"]["securitySchemes"]["HTTPBearer"] == {
        "type": "http", "scheme": "bearer", "description": spec["components"][
            "securitySchemes"]["HTTPBearer"]["description"]}
    post = spec["paths"]["/synthesize"]["post"]
    assert post["security"] == [{}, {"HTTPBearer": []}]  # keys are optional
    assert {"400", "401", "408", "413", "415", "422", "503"} <= set(post["responses"])


# A value the model takes for each key that holds a conversation or a trace.
_GIVEN = {"messages": [{"role": "user", "content": "hi"}],
          "contents": [{"role": "user", "parts": [{"text": "hi"}]}], "input": "hi",
          "actions": [{"action": "ls", "action_input": ".", "observation": "a.py"}],
          "scratchpad": "Thought: look.\nAction: ls\nObservation: a.py"}


def _models() -> dict[str, type[BaseModel]]:
    from app.api import schemas

    found: dict[str, type[BaseModel]] = {}
    for info in pkgutil.iter_modules(schemas.__path__):
        module = importlib.import_module(f"app.api.schemas.{info.name}")
        found.update({k: v for k, v in vars(module).items()
                      if isinstance(v, type) and issubclass(v, BaseModel)})
    return found


def _one_of_schemas() -> list[tuple[str, list[str]]]:
    schemas = openapi_document()["components"]["schemas"]
    return [(name, s["x-exactly-one-of"]) for name, s in schemas.items()
            if "x-exactly-one-of" in s]


@pytest.mark.parametrize(("name", "keys"), _one_of_schemas())
def test_exactly_one_of_is_said_in_json_schema_as_the_model_reads_it(name, keys):
    """Each key absent, null or given, in every combination: the JSON Schema (what a
    validator or a schema-driven fuzzer reads) refuses exactly the bodies the model
    refuses for that rule."""
    rule = {k: v for k, v in openapi_document()["components"]["schemas"][name].items()
            if k in ("not", "oneOf", "anyOf", "allOf")}
    assert rule, f"{name} states exactly one of {keys} only as x-exactly-one-of"
    model = _models()[name]
    for states in itertools.product(("absent", "null", "given"), repeat=len(keys)):
        body = {k: (None if state == "null" else _GIVEN[k])
                for k, state in zip(keys, states, strict=True) if state != "absent"}
        extra = {"question": "Done?"} if name == "RescueRequest" else {}
        try:
            model.model_validate({**body, **extra})
            model_takes = True
        except ValidationError as exc:
            model_takes = "exactly one" not in str(exc)
        schema_takes = jsonschema.Draft202012Validator(rule).is_valid(body)
        assert schema_takes == model_takes, (name, states)
