"""Compile the engine's hot modules with mypyc; everything else is in pyproject.toml.

Every request runs the engine over the whole transcript, and most of its time
outside tokenization is Python-level work that mypyc turns into C. The modules
are plain, strictly typed Python and run as they are when the build is
skipped: CONTEXTSYNTH_PURE_PYTHON=1 installs them uncompiled (for a platform
without a C compiler, or to debug with Python tracebacks).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build import build
from setuptools.command.egg_info import egg_info

# The one top-level name an installed wheel adds: app/launcher is its __init__, and the
# service's package ``app`` goes inside it (see app/launcher/__init__.py for why).
TOP = "contextsynth"

# The modules a /synthesize, /compress-history or /summarize-trace call runs
# through on every message, or on every call (caches.py makes each call's context,
# nudge.py its nudge). Exception classes (errors.py) and the LLM-facing modules
# stay interpreted: they are not hot, and plugins may subclass them. pacing.py must
# stay interpreted: entering its function is where a long compiled step lets the
# event loop's thread run.
COMPILED = [
    "app/engine/compaction/base.py",
    "app/engine/compaction/blocknotes.py",
    "app/engine/compaction/closings.py",
    "app/engine/compaction/fast.py",
    "app/engine/compaction/ledger.py",
    "app/engine/compaction/lifting.py",
    "app/engine/compaction/masking.py",
    "app/engine/compaction/notes.py",
    "app/engine/compaction/payback.py",
    "app/engine/compaction/rebuild.py",
    "app/engine/compaction/runs.py",
    "app/engine/compaction/tails.py",
    "app/engine/compaction/window.py",
    "app/engine/footprint.py",
    "app/engine/jobs/accounting.py",
    "app/engine/jobs/caches.py",
    "app/engine/jobs/history/compressor.py",
    "app/engine/jobs/synthesize/asked.py",
    "app/engine/jobs/synthesize/nudge.py",
    "app/engine/jobs/synthesize/strides.py",
    "app/engine/jobs/synthesize/synthesizer.py",
    "app/engine/jobs/trace/summarizer.py",
    "app/engine/jsontext.py",
    "app/engine/memo.py",
    "app/engine/prompts.py",
    "app/engine/reading/answers.py",
    "app/engine/reading/calls.py",
    "app/engine/reading/confidence.py",
    "app/engine/reading/facts.py",
    "app/engine/reading/factscan.py",
    "app/engine/reading/gist.py",
    "app/engine/reading/names.py",
    "app/engine/reading/outcomes.py",
    "app/engine/reading/phases.py",
    "app/engine/reading/records.py",
    "app/engine/reading/repeats.py",
    "app/engine/reading/salient.py",
    "app/engine/reading/tags.py",
    "app/engine/reading/textactions.py",
    "app/engine/reading/verbs.py",
    "app/engine/transcript/formats/anthropic.py",
    "app/engine/transcript/formats/gemini.py",
    "app/engine/transcript/formats/numbers.py",
    "app/engine/transcript/formats/openai.py",
    "app/engine/transcript/formats/parts.py",
    "app/engine/transcript/formats/responses.py",
    "app/engine/transcript/formats/size.py",
    "app/engine/transcript/model.py",
    "app/engine/transcript/pieces.py",
    "app/engine/transcript/sizes.py",
    "app/engine/transcript/tokens.py",
]


def _extensions() -> list[object]:
    if os.environ.get("CONTEXTSYNTH_PURE_PYTHON", "") not in ("", "0"):
        return []
    from mypyc.build import mypycify

    # The engine imports nothing outside the standard library, so mypy runs here without
    # the project's config (its pydantic plugin is not in the build environment; the
    # strict check is the test suite's job). debug_level 0: no C debug info, a faster build.
    # CONTEXTSYNTH_MYPYC_OPT sets the C compiler's level (3 unless set): the test that
    # builds the image's wheel to check what it holds builds at 0, in half the time.
    return list(mypycify(["--config-file=", *COMPILED],
                         opt_level=os.environ.get("CONTEXTSYNTH_MYPYC_OPT", "3"),
                         debug_level="0", group_name="contextsynth_engine"))


class _BuildUnderOneName(build):
    """Moves what the build made for ``app`` (and mypyc's shared library, which the
    compiled modules import by its top-level name) under ``contextsynth/``.

    Editable installs run the build's steps one by one, never this ``run``: a checkout
    keeps ``app`` importable as it is laid out."""

    def run(self) -> None:
        super().run()
        lib = Path(self.build_lib)
        home = lib / TOP
        bundled = home / "app"
        if bundled.exists():  # a second run over the same build folder
            shutil.rmtree(bundled)
        shutil.move(lib / "app", bundled)
        for shared in lib.glob("*__mypyc*"):
            target = home / shared.name
            target.unlink(missing_ok=True)
            shutil.move(shared, target)


class _OneTopLevelName(egg_info):
    """The metadata's top_level.txt names what a wheel installs at the top: tools such as
    ``importlib.metadata.packages_distributions`` read it to tell who owns ``app``."""

    def run(self) -> None:
        super().run()
        Path(self.egg_info, "top_level.txt").write_text(f"{TOP}\n")


setup(
    packages=[*find_packages(include=["app", "app.*"], exclude=["app.launcher"]), TOP],
    package_dir={TOP: "app/launcher"},
    ext_modules=_extensions(),
    cmdclass={"build": _BuildUnderOneName, "egg_info": _OneTopLevelName},
)
