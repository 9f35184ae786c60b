#!/usr/bin/env bash
# Set up on first use, then serve on embedded defaults (in-memory, fast mode, no keys).
# Settings come from CONTEXTSYNTH_* variables; arguments go to `contextsynth serve`.
# Serving installs the project without the development tools (scripts/test.sh adds them).
set -euo pipefail
cd "$(dirname "$0")/.."
CONTEXTSYNTH_EXTRAS="${CONTEXTSYNTH_EXTRAS-}"
# With no keys set the service is open to whoever reaches it: from a checkout, only
# this machine does unless CONTEXTSYNTH_HOST (or --host) says otherwise.
export CONTEXTSYNTH_HOST="${CONTEXTSYNTH_HOST:-127.0.0.1}"
source scripts/setup.sh
exec .venv/bin/contextsynth serve "$@"
