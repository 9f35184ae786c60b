# Sourced by serve.sh and test.sh: make .venv, install the project once per
# pyproject.toml, and rebuild the compiled engine modules whenever their sources change.
# CONTEXTSYNTH_EXTRAS names the extras to install (test.sh: dev, the default; serve.sh:
# none, which is what serving needs).
set -euo pipefail
PYTHON=${PYTHON:-python3}
EXTRAS=${CONTEXTSYNTH_EXTRAS-dev}
if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv with $("$PYTHON" --version)" >&2
    "$PYTHON" -m venv .venv
fi
# setup.py compiles app/engine with mypyc (unless CONTEXTSYNTH_PURE_PYTHON=1); the
# extensions sit beside their sources and shadow them, so a stale one must never stay.
# The service's project file and its Python client's (the tests install both).
project=$({ cat pyproject.toml; cat clients/python/pyproject.toml 2>/dev/null || true; } \
          | sha256sum | cut -c1-16)
deps=".venv/.installed-$project-${EXTRAS:-none}"
build=".venv/.built-pure-${CONTEXTSYNTH_PURE_PYTHON:-0}"
remove_extensions() {
    find app -name '*.so' -delete
    rm -f ./*__mypyc*.so
}
installed=""
if [ -f "$deps" ] || { [ -z "$EXTRAS" ] && [ -f ".venv/.installed-$project-dev" ]; }; then
    installed=yes  # what serving needs is part of the dev install
fi
if [ -z "$installed" ]; then
    spec="."
    [ -n "$EXTRAS" ] && spec=".[$EXTRAS]"
    echo "setup: installing contextsynth ($spec) and its dependencies into .venv; pip" \
         "names each package as it comes, then compiles the engine with mypyc" \
         "('Building editable for contextsynth', a minute or two)" >&2
    remove_extensions
    touch .venv/.building  # before the build: an edit made meanwhile is newer
    .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
    # Not quiet: each package pip fetches is a line of progress.
    .venv/bin/python -m pip install --disable-pip-version-check -e "$spec" >&2
    if [ "$EXTRAS" = dev ]; then  # the tests drive the service through its Python client
        .venv/bin/python -m pip install --quiet --disable-pip-version-check -e clients/python
    fi
    rm -f .venv/.installed-* .venv/.built-*
    touch "$deps"
    mv .venv/.building "$build"
    echo "setup: done" >&2
elif [ ! -f "$build" ] || [ -n "$(find setup.py app/engine -name '*.py' -newer "$build")" ]; then
    echo "engine sources or build mode changed: reinstalling the engine (compiling takes about a minute)" >&2
    remove_extensions
    touch .venv/.building
    .venv/bin/python -m pip install --quiet --no-deps -e .
    rm -f .venv/.built-*
    mv .venv/.building "$build"
fi
