"""Compile the engine's hot modules with mypyc; everything else is in pyproject.toml.

Every request runs the engine over the whole transcript, and most of its time
outside tokenization is Python-level work that mypyc turns into C. The modules
are plain, strictly typed Python and run as they are when the build is
skipped: CONTEXTSYNTH_PURE_PYTHON=1 installs them uncompiled (for a platform
without a C compiler, or to debug with Python tracebacks).
"""

from __future__ import annotations

import os

from setuptools import setup

# The modules a /synthesize, /compress-history or /summarize-trace call runs
# through on every message, or on every call (caches.py makes each call's context,
# prompts.py its nudge). Exception classes (errors.py) and the LLM-facing modules
# stay interpreted: they are not hot, and plugins may subclass them.
COMPILED = [
    "app/engine/accounting.py",
    "app/engine/answers.py",
    "app/engine/blocknotes.py",
    "app/engine/blocks.py",
    "app/engine/caches.py",
    "app/engine/calls.py",
    "app/engine/compaction.py",
    "app/engine/facts.py",
    "app/engine/factscan.py",
    "app/engine/fast.py",
    "app/engine/gist.py",
    "app/engine/history.py",
    "app/engine/jsontext.py",
    "app/engine/ledger.py",
    "app/engine/masking.py",
    "app/engine/memo.py",
    "app/engine/notes.py",
    "app/engine/outcomes.py",
    "app/engine/pieces.py",
    "app/engine/prompts.py",
    "app/engine/repeats.py",
    "app/engine/phases.py",
    "app/engine/runs.py",
    "app/engine/salient.py",
    "app/engine/synthesis.py",
    "app/engine/tails.py",
    "app/engine/tokens.py",
    "app/engine/trace.py",
    "app/engine/transcript.py",
    "app/engine/verbs.py",
    "app/engine/formats/anthropic.py",
    "app/engine/formats/gemini.py",
    "app/engine/formats/numbers.py",
    "app/engine/formats/openai.py",
    "app/engine/formats/parts.py",
    "app/engine/formats/responses.py",
    "app/engine/formats/size.py",
]


def _extensions() -> list[object]:
    if os.environ.get("CONTEXTSYNTH_PURE_PYTHON", "") not in ("", "0"):
        return []
    from mypyc.build import mypycify

    # The engine imports nothing outside the standard library, so mypy runs here without
    # the project's config (its pydantic plugin is not in the build environment; the
    # strict check is the test suite's job). debug_level 0: no C debug info, a faster build.
    return list(mypycify(["--config-file=", *COMPILED], opt_level="3", debug_level="0",
                         group_name="contextsynth_engine"))


setup(ext_modules=_extensions())
