# Sourced by serve.sh and test.sh: make .venv, install the project once per
# pyproject.toml, and rebuild the compiled engine modules whenever their sources change.
# CONTEXTSYNTH_EXTRAS names the extras to install (test.sh: dev, the default; serve.sh:
# none, which is what serving needs).
# SETUP_COMPILE=background (serve.sh): while the compiled engine is not built, install the
# engine interpreted (same behaviour, slower calls) so that the service answers within a
# minute or two, and compile it in the background for the next start. Unset (test.sh, CI):
# compile before going on, since the compiled engine is what the tests must run.
set -euo pipefail
PYTHON=${PYTHON:-python3}
EXTRAS=${CONTEXTSYNTH_EXTRAS-dev}
PURE=${CONTEXTSYNTH_PURE_PYTHON:-0}
[ "$PURE" = "" ] && PURE=0
LATER=""
[ "${SETUP_COMPILE:-}" = background ] && [ "$PURE" = 0 ] && LATER=yes
# setup.py compiles app/engine with mypyc (unless CONTEXTSYNTH_PURE_PYTHON=1); the
# extensions sit beside their sources and shadow them, so a stale one must never stay.
remove_extensions() {
    find app -name '*.so' -delete
    rm -f ./*__mypyc*.so
}

# Runs a command with its output in a log and says every 5 seconds what it is doing and
# about how long is left: pip is silent for minutes while it builds. The command runs in
# the foreground, so that Ctrl-C stops it; the ticker stops with it, or with this shell.
# Usage: with_progress WHAT ABOUT_SECONDS LOG COMMAND...
with_progress() {
    local what=$1 about=$2 log=$3 status=0 ticker
    shift 3
    echo "setup: $what (about $about s on 2 cores; log: $log)" >&2
    : >"$log"
    tick "$what" "$about" "$log" "$$" &
    ticker=$!
    "$@" >"$log" 2>&1 || status=$?
    kill "$ticker" 2>/dev/null || true
    wait "$ticker" 2>/dev/null || true
    if [ "$status" != 0 ]; then
        tail -n 25 "$log" >&2
        echo "setup: $what failed (exit $status); the whole log: $log" >&2
        return "$status"
    fi
}

tick() {  # tick WHAT ABOUT_SECONDS LOG SHELL_PID
    local started=$SECONDS left last
    while sleep 5 </dev/null >/dev/null 2>&1 && kill -0 "$4" 2>/dev/null; do
        left=$(($2 - SECONDS + started))
        [ "$left" -gt 0 ] && left="about $left s left" || left="longer than usual"
        last=$({ grep -v '^WARNING' "$3" || true; } | tail -n 1 \
               | sed 's|file://[^ ]*/||; s| /[^ ]*/| |' | cut -c1-70)
        echo "setup: $1: $((SECONDS - started)) s, $left${last:+ ($last)}" >&2
    done
}

# A compile serve.sh left running in the background: .venv/.compiling holds its pid.
compiling() {
    [ -f .venv/.compiling ] && kill -0 "$(cat .venv/.compiling)" 2>/dev/null
}

# The engine compiled beside the service: nice'd so that it does not slow the first
# answers, its own stamp so that an edit made meanwhile is newer, and the editable install
# that puts the extensions beside their sources only once they are all built (the running
# service imported every engine module at start-up and keeps them).
compile_in_background() {
    touch .venv/.building-background
    (
        echo "$BASHPID" >.venv/.compiling
        trap 'rm -f .venv/.compiling' EXIT
        started=$SECONDS
        if CONTEXTSYNTH_PURE_PYTHON=0 nice -n 10 .venv/bin/python -m pip install --quiet \
                --disable-pip-version-check --no-deps -e . >.venv/compile.log 2>&1; then
            rm -f .venv/.built-*
            mv .venv/.building-background .venv/.built-pure-0
            echo "setup: the engine is compiled ($((SECONDS - started)) s); the next start" \
                 "of scripts/serve.sh serves with it" >&2
        else
            echo "setup: compiling the engine failed (.venv/compile.log); the service" \
                 "goes on with the interpreted engine (no C compiler? then" \
                 "CONTEXTSYNTH_PURE_PYTHON=1 stops the attempts)" >&2
        fi
    ) &
    echo "setup: serving with the interpreted engine while the compiled one builds in" \
         "the background (3 to 8 minutes on 2 cores; log: .venv/compile.log); the next start" \
         "serves with it" >&2
}

if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv with $("$PYTHON" --version)" >&2
    "$PYTHON" -m venv .venv
fi
if compiling; then
    if [ -n "$LATER" ]; then
        echo "setup: the engine is still compiling in the background (.venv/compile.log);" \
             "serving with the interpreted one meanwhile" >&2
    else  # two pip runs on one .venv would undo each other
        echo "setup: waiting for the engine compile serve.sh started (.venv/compile.log)" >&2
        while compiling; do sleep 5; echo "setup: still compiling the engine" >&2; done
    fi
fi
# The service's project file and its Python client's (the tests install both).
project=$({ cat pyproject.toml; cat clients/python/pyproject.toml 2>/dev/null || true; } \
          | sha256sum | cut -c1-16)
deps=".venv/.installed-$project-${EXTRAS:-none}"
build=".venv/.built-pure-$PURE"
installed=""
if [ -f "$deps" ] || { [ -z "$EXTRAS" ] && [ -f ".venv/.installed-$project-dev" ]; }; then
    installed=yes  # what serving needs is part of the dev install
fi
if [ -z "$installed" ]; then
    spec="."
    [ -n "$EXTRAS" ] && spec=".[$EXTRAS]"
    now=$PURE
    [ -n "$LATER" ] && now=1  # compiled after, in the background
    about=$([ "$now" = 1 ] && echo 45 || echo 240)
    remove_extensions
    touch .venv/.building  # before the build: an edit made meanwhile is newer
    .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
    with_progress "installing contextsynth ($spec) and its dependencies into .venv$(
        [ "$now" = 1 ] || echo ', then compiling the engine with mypyc')" "$about" \
        .venv/install.log env CONTEXTSYNTH_PURE_PYTHON="$now" \
        .venv/bin/python -m pip install --disable-pip-version-check -e "$spec"
    if [ "$EXTRAS" = dev ]; then  # the tests drive the service through its Python client
        .venv/bin/python -m pip install --quiet --disable-pip-version-check -e clients/python
    fi
    rm -f .venv/.installed-* .venv/.built-*
    touch "$deps"
    mv .venv/.building ".venv/.built-pure-$now"
    echo "setup: done" >&2
elif [ ! -f "$build" ] || [ -n "$(find setup.py app/engine -name '*.py' -newer "$build")" ]
then
    if [ -n "$LATER" ]; then
        if ! compiling; then  # until a background compile is done, the sources run as they are
            if [ -n "$(find app -name '*.so')" ]; then
                echo "setup: engine sources changed: serving them interpreted" >&2
            fi
            remove_extensions
            rm -f .venv/.built-*
            touch .venv/.built-pure-1
        fi
    else
        remove_extensions
        touch .venv/.building
        with_progress "engine sources or build mode changed: reinstalling the engine" \
            "$([ "$PURE" = 1 ] && echo 20 || echo 180)" .venv/install.log \
            .venv/bin/python -m pip install --disable-pip-version-check --no-deps -e .
        rm -f .venv/.built-*
        mv .venv/.building "$build"
    fi
fi
if [ -n "$LATER" ] && [ ! -f .venv/.built-pure-0 ] && ! compiling; then
    compile_in_background
fi
