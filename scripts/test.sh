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
if [ "$#" -gt 0 ]; then
    exec .venv/bin/python -m pytest "$@"
fi
# The whole suite, as two pytests side by side on the two cores: the tests marked
# `beside` (see tests/conftest.py: those that mostly wait on another program, such as
# the coding agents, the wheel's build and a fresh clone, and the corpus-wide quality
# floors), and the rest; the first's output follows the rest's.
log=$(mktemp)
.venv/bin/python -m pytest -m beside >"$log" 2>&1 &
beside=$!
status=0
.venv/bin/python -m pytest -m "not beside" || status=$?
beside_status=0
wait "$beside" || beside_status=$?
echo "--- beside the rest: the tests that run other programs, and the quality floors (pytest -m beside):"
cat "$log"
rm -f "$log"
[ "$status" = 0 ] && [ "$beside_status" != 5 ] && status=$beside_status
exit "$status"
