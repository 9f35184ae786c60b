# Sourced by serve.sh and test.sh: make .venv, install the project once per
# pyproject.toml, and rebuild the compiled engine modules whenever their sources change.
set -euo pipefail
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
# setup.py compiles app/engine with mypyc (unless CONTEXTSYNTH_PURE_PYTHON=1); the
# extensions sit beside their sources and shadow them, so a stale one must never stay.
deps=".venv/.installed-$(sha256sum pyproject.toml | cut -c1-16)"
build=".venv/.built-pure-${CONTEXTSYNTH_PURE_PYTHON:-0}"
remove_extensions() {
    find app -name '*.so' -delete
    rm -f ./*__mypyc*.so
}
if [ ! -f "$deps" ]; then
    remove_extensions
    touch .venv/.building  # before the build: an edit made meanwhile is newer
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet -e ".[dev]"
    rm -f .venv/.installed-* .venv/.built-*
    touch "$deps"
    mv .venv/.building "$build"
elif [ ! -f "$build" ] || [ -n "$(find setup.py app/engine -name '*.py' -newer "$build")" ]; then
    echo "engine sources or build mode changed: reinstalling the engine (compiling takes about a minute)" >&2
    remove_extensions
    touch .venv/.building
    .venv/bin/python -m pip install --quiet --no-deps -e .
    rm -f .venv/.built-*
    mv .venv/.building "$build"
fi
