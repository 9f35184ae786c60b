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


@pytest.mark.anyio
@pytest.mark.parametrize("index", range(4))
async def test_every_documented_example_is_accepted(client, index):
    example = openapi_document()["components"]["schemas"]["SynthesizeRequest"]["examples"][index]
    r = await client.post("/synthesize", json=example)
    assert r.status_code == 200, r.text
