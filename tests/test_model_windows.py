"""scripts/refresh_model_windows.py writes the engine's table of model windows from
LiteLLM's model map: what it keeps of the map, and that the shipped module is its
output (not edited by hand). The network is not used: the map is a fixture here."""

import importlib.util
import json
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

from app.engine.jobs.history import model_windows

ROOT = Path(__file__).resolve().parents[1]

LICENSE = """Portions of this software are licensed as follows:
* enterprise/ is under enterprise/LICENSE.
---
MIT License

Copyright (c) 2023 Someone

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software.
"""

MAP = {
    "sample_spec": {"mode": "one of: chat, embedding", "max_input_tokens": "max input"},
    "gpt-4o": {"mode": "chat", "max_input_tokens": 128_000, "max_output_tokens": 16_384},
    "openai/gpt-4o": {"mode": "chat", "max_input_tokens": 128_000},  # a copy: left out
    "azure/gpt-4o": {"mode": "chat", "max_input_tokens": 100_000},  # differs: kept
    "old-model": {"mode": "chat", "max_tokens": 4_096},  # no input limit: max_tokens
    "o1-pro": {"mode": "responses", "max_input_tokens": 200_000},
    "text-embedding-3-small": {"mode": "embedding", "max_input_tokens": 8_191},
    "dall-e-3": {"mode": "image_generation"},
    "no-size": {"mode": "chat"},
    "Mixed-Case": {"mode": "chat", "max_input_tokens": 32_000},
    "vertex_ai/claude-x": {"mode": "chat", "max_input_tokens": 200_000},
    "bedrock/claude-x": {"mode": "chat", "max_input_tokens": 200_000},
    "hostA/llama-y": {"mode": "chat", "max_input_tokens": 8_192},
    "hostB/llama-y": {"mode": "chat", "max_input_tokens": 131_072},
}


def script() -> ModuleType:
    path = ROOT / "scripts" / "refresh_model_windows.py"
    spec = importlib.util.spec_from_file_location("refresh_model_windows", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_table_keeps_chat_models_with_their_input_limit():
    assert script().table_of(MAP) == {
        "gpt-4o": 128_000, "azure/gpt-4o": 100_000, "old-model": 4_096, "o1-pro": 200_000,
        "mixed-case": 32_000,
        # Known by its own name when every provider says the same; else by theirs.
        "claude-x": 200_000, "hosta/llama-y": 8_192, "hostb/llama-y": 131_072}


def test_the_written_module_holds_the_table_the_license_and_the_source(tmp_path):
    s = script()
    wheel = tmp_path / "litellm-9.9.9-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(s.MAP_IN_WHEEL, json.dumps(MAP))
        archive.writestr("litellm-9.9.9.dist-info/METADATA", "Name: litellm\nVersion: 9.9.9\n")
        archive.writestr("litellm-9.9.9.dist-info/licenses/LICENSE", LICENSE)
    out = tmp_path / "windows.py"
    s.main(["--wheel", str(wheel), "--date", "2026-01-02", "-o", str(out)])
    text = out.read_text()
    namespace: dict[str, object] = {}
    exec(compile(text, str(out), "exec"), namespace)
    assert namespace["WINDOWS"] == s.table_of(MAP)
    assert (namespace["LITELLM_VERSION"], namespace["LICENSE"], namespace["REFRESHED"]) == (
        "9.9.9", "MIT", "2026-01-02")
    assert "Copyright (c) 2023 Someone" in text and "enterprise" not in text
    # Sorted, so a refresh's diff shows only what changed in the map.
    assert list(namespace["WINDOWS"]) == sorted(namespace["WINDOWS"])  # type: ignore[arg-type]


def test_a_wheel_no_longer_under_mit_is_refused():
    with pytest.raises(SystemExit, match="no longer MIT"):
        script().mit_notice("Apache License 2.0 ...")


def test_the_shipped_module_is_what_the_script_writes():
    # Its own table run through the script again comes out the same, byte for byte.
    s = script()
    text = (ROOT / "app/engine/jobs/history/model_windows.py").read_text()
    windows = model_windows.WINDOWS
    assert len(windows) > 1000
    assert s.table_of({name: {"mode": "chat", "max_input_tokens": size}
                       for name, size in windows.items()}) == windows
    doc = model_windows.__doc__ or ""
    notice = doc.split("as the wheel states it:\n\n", 1)[1]
    license_text = "\n".join(line.removeprefix("    ") for line in notice.splitlines())
    assert s.render(windows, model_windows.LITELLM_VERSION, license_text,
                    model_windows.REFRESHED) == text
    assert model_windows.LICENSE == "MIT" and "MIT License" in doc
