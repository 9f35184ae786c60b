"""A client generated from openapi.yaml, as a caller would make one, is typed: every
operation that takes a JSON body takes its request model, and every JSON answer comes
back as its response model (openapi-python-client, the usual Python generator)."""

import importlib
import inspect
import json
import subprocess
import sys
import typing
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "openapi.yaml"
GENERATOR = Path(sys.executable).parent / "openapi-python-client"
PACKAGE = "generated_contextsynth_client"


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> str:
    scratch = tmp_path_factory.mktemp("client")
    out = scratch / "generated"
    # Its own package name: contextsynth_client is the repository's client (clients/python),
    # installed in the same environment and imported by its tests in the same run.
    config = scratch / "config.json"
    config.write_text(json.dumps({"package_name_override": PACKAGE}))
    done = subprocess.run([str(GENERATOR), "generate", "--path", str(SPEC), "--output-path",
                           str(out), "--overwrite", "--config", str(config)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    # What it could not read it leaves out with a warning, and the client still builds.
    assert "WARNING" not in done.stdout and "Unable to" not in done.stdout, done.stdout
    sys.path.insert(0, str(out))
    yield PACKAGE
    sys.path.remove(str(out))


def _operations() -> list[tuple[str, str, dict[str, typing.Any]]]:
    spec = yaml.safe_load(SPEC.read_text())
    return [(path, method, op) for path, ops in spec["paths"].items()
            for method, op in ops.items()]


def _type_names(annotation: typing.Any) -> set[str]:
    if isinstance(annotation, str):
        parts = annotation.replace("None", "").split("|")
        return {part.strip() for part in parts if part.strip()}
    args = typing.get_args(annotation)
    if args:
        return {name for a in args for name in _type_names(a)}
    return {getattr(annotation, "__name__", str(annotation))}


@pytest.mark.parametrize(("path", "method", "operation"), _operations(),
                         ids=[f"{m.upper()} {p}" for p, m, _ in _operations()])
def test_every_operation_is_typed(client, path, method, operation):
    module = importlib.import_module(f"{client}.api.default.{operation['operationId']}")
    # An answer with no JSON schema (the metrics' text) has only the detailed call.
    signature = inspect.signature(getattr(module, "sync", None) or module.sync_detailed)
    body = operation.get("requestBody", {}).get("content", {}).get("application/json")
    if body is not None:
        model = body["schema"]["$ref"].rsplit("/", 1)[1]
        assert _type_names(signature.parameters["body"].annotation) == {model}
    answer = operation["responses"]["200"].get("content", {})
    if "application/json" in answer:
        model = answer["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
        assert model in _type_names(signature.return_annotation)
