from pathlib import Path

from app.settings import Settings

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def test_every_setting_is_documented():
    missing = [name for name in Settings.model_fields
               if f"`CONTEXTSYNTH_{name.upper()}`" not in README]
    assert missing == []


def test_every_endpoint_has_a_section():
    from app.cli import openapi_document

    for path, operations in openapi_document()["paths"].items():
        if path not in ("/healthz", "/readyz", "/metrics"):
            for method in operations:
                assert f"`{method.upper()} {path}`" in README, path
