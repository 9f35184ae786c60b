#!/usr/bin/env bash
# Set up on first use, then serve on embedded defaults (in-memory, fast mode, no keys).
# Settings come from CONTEXTSYNTH_* variables; arguments go to `contextsynth serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
exec .venv/bin/contextsynth serve "$@"
