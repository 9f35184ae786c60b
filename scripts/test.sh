#!/usr/bin/env bash
# Set up on first use, then run the whole suite: lint, strict types, tests.
# Arguments go to pytest (for example: scripts/test.sh tests/engine -k phases).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
if [ "${1:-}" = "--fast" ]; then
    # While working: the unit tests (no app, server, Redis or whole-corpus replay; see
    # tests/conftest.py). `-m integration` and `-m e2e` pick the others.
    shift
    exec .venv/bin/python -m pytest -m unit "$@"
fi
.venv/bin/ruff check app tests scripts setup.py
.venv/bin/mypy
.venv/bin/python -m pytest "$@"
