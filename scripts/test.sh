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
# The whole suite: the tests that run another program (marked `programs`, see
# tests/conftest.py: the coding agents through the service, pip building the image's
# wheel, serve.sh on a fresh clone) spend most of their time waiting on it, so they run
# beside the rest, on the second core, instead of after it; their output follows the
# rest's.
log=$(mktemp)
.venv/bin/python -m pytest -m programs >"$log" 2>&1 &
programs=$!
status=0
.venv/bin/python -m pytest -m "not programs" || status=$?
programs_status=0
wait "$programs" || programs_status=$?
echo "--- the tests that run other programs: coding agents, builds (pytest -m programs):"
cat "$log"
rm -f "$log"
[ "$status" = 0 ] && [ "$programs_status" != 5 ] && status=$programs_status
exit "$status"
