"""The Python client (clients/python) against openapi.yaml: a model per schema with the
same fields, the same required ones and the same choices, and a method per operation
that takes and answers the spec's models. A change of the spec without the client's
fails here."""

from __future__ import annotations

import inspect
import typing
from pathlib import Path
from typing import Any

import pytest
import yaml
from contextsynth_client import AsyncClient, Client, models
from pydantic import BaseModel

ROOT = Path(__file__).resolve().parents[2]
SPEC = yaml.safe_load((ROOT / "openapi.yaml").read_text())
SCHEMAS: dict[str, dict[str, Any]] = SPEC["components"]["schemas"]

# FastAPI's own 422 shape, published for the path parameter of /expand; the service
# answers a problem document instead (errors.py), so the client reads that.
NOT_MODELLED = {"HTTPValidationError", "ValidationError"}
# Enums the client types as Literal aliases of the same name, not as models.
ENUMS = {"Tier"}
# Proxy mode's receipt: its route is left out of the spec (its neighbours' bodies are
# the providers' own).
CLIENT_ONLY = {"ProxyReceipt"}
# Method names where the client reads better than the operation id; None: not offered
# (Prometheus scrapes /metrics, no caller parses it).
METHODS = {"healthz": "health", "readyz": "ready", "metrics": None}


def _client_models() -> dict[str, type[BaseModel]]:
    return {name: obj for name, obj in vars(models).items()
            if inspect.isclass(obj) and issubclass(obj, BaseModel)
            and obj.__module__ == models.__name__ and not name.startswith("_")
            and obj not in (models.Request, models.Answer)}


def _wire_name(name: str, field: Any) -> str:
    return field.serialization_alias or field.alias or name


def _enum_of(schema: dict[str, Any]) -> set[Any] | None:
    """The choices of a property: its own enum, or that of an anyOf member."""
    if "enum" in schema:
        return set(schema["enum"])
    if "$ref" in schema:
        return _enum_of(SCHEMAS[schema["$ref"].rsplit("/", 1)[1]])
    for member in schema.get("anyOf", []):
        found = _enum_of(member)
        if found is not None:
            return found
    return None


def _literals(annotation: Any) -> set[Any] | None:
    if typing.get_origin(annotation) is typing.Literal:
        return set(typing.get_args(annotation))
    for arg in typing.get_args(annotation):
        found = _literals(arg)
        if found is not None:
            return found
    return None


MODELLED = sorted(set(SCHEMAS) - NOT_MODELLED - ENUMS)


def test_every_schema_has_a_model_and_every_model_a_schema():
    assert sorted(set(_client_models()) - CLIENT_ONLY) == MODELLED
    for enum in ENUMS:
        assert set(typing.get_args(getattr(models, enum))) == set(SCHEMAS[enum]["enum"])


@pytest.mark.parametrize("name", MODELLED)
def test_fields_and_required_ones_match_the_schema(name):
    schema, model = SCHEMAS[name], getattr(models, name)
    fields = {_wire_name(n, f): f for n, f in model.model_fields.items()}
    assert set(fields) == set(schema["properties"]), name
    required = {wire for wire, f in fields.items() if f.is_required()}
    assert required == set(schema.get("required", [])), name
    # A body the service refuses unknown fields of is refused by the client too; an
    # answer keeps what a newer service adds.
    closed = schema.get("additionalProperties") is False
    assert (model.model_config.get("extra") == "forbid") == closed, name


@pytest.mark.parametrize("name", [n for n in MODELLED if issubclass(
    getattr(models, n), models.Request)])
def test_the_choices_a_request_offers_are_the_schema_s(name):
    schema, model = SCHEMAS[name], getattr(models, name)
    hints = typing.get_type_hints(model)
    for field_name, field in model.model_fields.items():
        prop = schema["properties"][_wire_name(field_name, field)]
        offered = _literals(hints[field_name])
        expected = _enum_of(prop)
        if field_name == "strategies":  # a map whose keys are the choices
            expected = set(prop["propertyNames"]["enum"])
        assert offered == expected, f"{name}.{field_name}"


def test_requests_are_what_the_spec_takes_and_answers_what_it_answers():
    for schema in SCHEMAS:
        if schema in _client_models():
            request_side = issubclass(getattr(models, schema), models.Request)
            assert request_side == (schema.endswith("In") or schema.endswith("Request")
                                    or schema.startswith("Reasoning")), schema


def _operations() -> list[tuple[str, str, dict[str, Any]]]:
    return [(path, method, op) for path, ops in SPEC["paths"].items()
            for method, op in ops.items()]


@pytest.mark.parametrize("client", [Client, AsyncClient])
@pytest.mark.parametrize(("path", "method", "operation"), _operations(),
                         ids=[f"{m.upper()} {p}" for p, m, _ in _operations()])
def test_every_operation_has_a_typed_method(client, path, method, operation):
    name = METHODS.get(operation["operationId"], operation["operationId"])
    if name is None:
        return
    call = getattr(client, name)
    hints = typing.get_type_hints(call)
    answer = operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    assert hints["return"].__name__ == answer.rsplit("/", 1)[1]
    body = operation.get("requestBody", {}).get("content", {}).get("application/json")
    taken = [p for p in inspect.signature(call).parameters if p != "self"]
    if body is not None:
        assert hints["request"].__name__ == body["schema"]["$ref"].rsplit("/", 1)[1]
        assert taken == ["request"]
    else:
        assert taken == [p["name"] for p in operation.get("parameters", [])]
