from pathlib import Path

import pytest
import yaml

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
