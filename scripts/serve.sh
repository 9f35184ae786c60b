#!/usr/bin/env bash
# Set up on first use (see scripts/setup.sh), then serve on embedded defaults
# (in-memory, fast mode, no keys).
# Settings come from CONTEXTSYNTH_* variables; arguments go to `contextsynth serve`.
# Serving installs the project without the development tools (scripts/test.sh adds them).
set -euo pipefail
cd "$(dirname "$0")/.."
CONTEXTSYNTH_EXTRAS="${CONTEXTSYNTH_EXTRAS-}"
# With no keys set the service is open to whoever reaches it: from a checkout, only
# this machine does unless CONTEXTSYNTH_HOST (or --host) says otherwise.
export CONTEXTSYNTH_HOST="${CONTEXTSYNTH_HOST:-127.0.0.1}"
# The first start serves with the interpreted engine at once and compiles it meanwhile.
SETUP_COMPILE=background
source scripts/setup.sh
exec .venv/bin/contextsynth serve "$@"
