"""Rewrite the table of model context windows (app/engine/jobs/history/model_windows.py)
from LiteLLM's model map.

LiteLLM keeps ``model_prices_and_context_window.json`` up to date with the providers'
published limits (MIT license); its wheel on PyPI carries a copy as
``litellm/model_prices_and_context_window_backup.json``. This script downloads the wheel
with pip (``pip download litellm --no-deps``, into a temporary folder: litellm is not a
dependency of the service, which never imports it), reads the map and the license out of
the wheel, and writes the table as a Python module: the engine reads no file at run time,
and the module is a plain dict literal. The output is sorted, so a refresh's diff is the
changes of the map.

    python scripts/refresh_model_windows.py                  # the newest litellm
    python scripts/refresh_model_windows.py --version 1.2.3  # a given release
    python scripts/refresh_model_windows.py --wheel path/to/litellm-....whl
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[1]
MODULE = ROOT / "app" / "engine" / "jobs" / "history" / "model_windows.py"
MAP_IN_WHEEL = "litellm/model_prices_and_context_window_backup.json"
SOURCE = "https://github.com/BerriAI/litellm/blob/main/model_prices_and_context_window.json"
# Models an agent holds a conversation with: chat completions, and the models served by
# OpenAI's Responses API only (o1-pro, gpt-5-pro, codex-mini), which the map files apart.
MODES = frozenset({"chat", "responses"})


class Source(NamedTuple):
    """What a refresh read: the map, the release it came with, and its license's text."""

    model_map: Mapping[str, Any]
    version: str
    license_text: str


def window(entry: Mapping[str, Any]) -> int | None:
    """A model's context window: its input limit, else its ``max_tokens`` (which older
    entries use for the whole window)."""
    for key in ("max_input_tokens", "max_tokens"):
        value = entry.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def suffixes(name: str) -> list[str]:
    """``name`` without its provider prefixes, longest first: ``a/b/c`` gives ``b/c``
    and ``c`` (as the engine's lookup tries them)."""
    parts = name.split("/")
    return ["/".join(parts[n:]) for n in range(1, len(parts))]


def table_of(model_map: Mapping[str, Any]) -> dict[str, int]:
    """Model name (lower case) -> window, for the chat models of LiteLLM's map.

    A name that differs only in case from another keeps the smaller window (the safer
    bound). A name with a provider prefix is left out when the lookup finds the same
    window without it (``openai/gpt-4o`` as ``gpt-4o``): most of the map is such copies."""
    full: dict[str, int] = {}
    for name, entry in model_map.items():
        if not isinstance(entry, Mapping) or entry.get("mode") not in MODES:
            continue
        size = window(entry)
        if size is None:
            continue
        key = name.strip().lower()
        full[key] = min(size, full.get(key, size))
    # A name served only behind prefixes (``vertex_ai/claude-3-5-sonnet``) is known by
    # its own name too when every provider gives it the same window: an agent sends the
    # name its provider's API takes.
    bare: dict[str, set[int]] = {}
    for key, size in full.items():
        if "/" in key:
            bare.setdefault(key.rsplit("/", 1)[1], set()).add(size)
    full.update({name: sizes.pop() for name, sizes in bare.items()
                 if name not in full and len(sizes) == 1})
    kept: dict[str, int] = {}
    # Fewest prefixes first: whether a name is a copy depends only on its suffixes,
    # which have fewer, so they are decided before it.
    for key in sorted(full, key=lambda k: (k.count("/"), k)):
        found = next((kept[s] for s in suffixes(key) if s in kept), None)
        if found != full[key]:
            kept[key] = full[key]
    return dict(sorted(kept.items()))


def mit_notice(license_text: str) -> str:
    """The MIT notice of the wheel's LICENSE (the file also names an ``enterprise/``
    folder under another license, which the map is not in); refuses any other license."""
    at = license_text.find("MIT License")
    if at < 0 or "Permission is hereby granted, free of charge" not in license_text[at:]:
        raise SystemExit("the litellm wheel's LICENSE is no longer MIT: check its terms "
                         "before refreshing the table from it")
    return license_text[at:].strip()


def render(table: Mapping[str, int], version: str, license_text: str, refreshed: str) -> str:
    """The module's text: the license and where the table came from, then the table."""
    notice = "\n".join(f"    {line}" if line else "" for line in
                       mit_notice(license_text).splitlines())
    rows = "".join(f"    {json.dumps(name)}: {size},\n" for name, size in sorted(table.items()))
    return f'''"""Context windows of models, in tokens, from LiteLLM's model map.

Generated by scripts/refresh_model_windows.py: do not edit it by hand, run the script
(see docs/development.md). Model name (lower case) -> its input limit, for the chat
models of the map; a name with a provider prefix only where it differs from the name
without it (the lookup is in ``windows``).

Source: {SOURCE}
(as the litellm {version} wheel on PyPI ships it, {MAP_IN_WHEEL}).
Its license, as the wheel states it:

{notice}
"""

SOURCE = "{SOURCE}"
LITELLM_VERSION = "{version}"
LICENSE = "MIT"
REFRESHED = "{refreshed}"

WINDOWS: dict[str, int] = {{
{rows}}}
'''


def read_wheel(wheel: Path) -> Source:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        model_map = json.loads(archive.read(MAP_IN_WHEEL))
        metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
        found = re.search(r"^Version: (\S+)$", archive.read(metadata).decode(), re.MULTILINE)
        licenses = [n for n in names if re.search(r"\.dist-info/(?:licenses/)?LICENSE", n)]
        if found is None or not licenses:
            raise SystemExit(f"{wheel.name} has no version or no LICENSE in its metadata")
        return Source(model_map, found.group(1), archive.read(licenses[0]).decode())


def download(into: Path, version: str | None) -> Path:
    wanted = f"litellm=={version}" if version else "litellm"
    subprocess.run([sys.executable, "-m", "pip", "download", wanted, "--no-deps",
                    "--only-binary=:all:", "--quiet", "-d", str(into)], check=True)
    wheels = sorted(into.glob("litellm-*.whl"))
    if not wheels:
        raise SystemExit("pip downloaded no litellm wheel")
    return wheels[-1]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", help="the litellm release to read (default: newest)")
    parser.add_argument("--wheel", type=Path, help="a litellm wheel already downloaded")
    parser.add_argument("--date", help="the refresh's date (default: today, UTC)")
    parser.add_argument("-o", "--output", type=Path, default=MODULE)
    args = parser.parse_args(argv)
    refreshed = args.date or datetime.datetime.now(datetime.UTC).date().isoformat()
    with tempfile.TemporaryDirectory() as folder:
        wheel = args.wheel or download(Path(folder), args.version)
        source = read_wheel(wheel)
    table = table_of(source.model_map)
    args.output.write_text(render(table, source.version, source.license_text, refreshed))
    print(f"{args.output}: {len(table)} models from litellm {source.version}")


if __name__ == "__main__":
    main()
