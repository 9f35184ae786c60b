#!/usr/bin/env bash
# Installs the coding agents that tests/agents runs through the proxy, into .agents/ in
# the clone (gitignored): npm programs under .agents/npm, each Python program in its own
# venv under .agents/venv/NAME (they pin dependencies that clash with the project's and
# with each other's, so never in .venv). Idempotent: a program already installed at a
# version in its range is left alone, so a second run takes a second or two.
# A program that fails to install is reported and skipped (its tests skip, naming it);
# the script itself fails only when nothing could be installed because npm or python is
# missing altogether. Usage: scripts/agents.sh [NAME...]  (no names: all of them)
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
AGENTS=$ROOT/.agents
PYTHON=${PYTHON:-python3}

# One line a program: its name (the tests' and `contextsynth wrap`'s), where it comes
# from, the package with its version range, and the executable it installs. The ranges
# are the versions the tests were written against: a new minor version changes the
# tools a program offers and the shapes it sends, and is taken on when its tests pass.
#   npm NAME PACKAGE@RANGE BIN
#   pypi NAME REQUIREMENT BIN
PROGRAMS=(
    "npm claude @anthropic-ai/claude-code@>=2.1.197,<2.2.0 claude"
    "npm codex @openai/codex@>=0.171.0,<0.172.0 codex"
    "npm gemini @google/gemini-cli@>=0.61.0,<0.62.0 gemini"
    "npm qwen @qwen-code/qwen-code@>=0.15.10,<0.16.0 qwen"
    "pypi aider aider-chat>=0.86.2,<0.87 aider"
    "pypi mini-swe-agent mini-swe-agent>=2.4.6,<2.5 mini"
    "pypi litellm litellm[proxy]>=1.108.7,<1.109 litellm"
)

ONLY=("$@")
# Whether NAME was asked for (no names: every program).
wanted() {
    [ "${#ONLY[@]}" -eq 0 ] && return 0
    for w in "${ONLY[@]}"; do [ "$w" = "$1" ] && return 0; done
    return 1
}

npm_missing=()
failed=()

for line in "${PROGRAMS[@]}"; do
    read -r kind name spec bin <<<"$line"
    wanted "$name" || continue
    case $kind in
        npm)
            package=${spec%@*}
            range=${spec##*@}
            range=${range//,/ }  # the table writes a range's parts comma-separated
            installed=$AGENTS/npm/node_modules/$package/package.json
            if [ -f "$installed" ] && [ -x "$AGENTS/npm/node_modules/.bin/$bin" ] \
                && node -e '
                    const [have, range] = [require(process.argv[1]).version, process.argv[2]];
                    const semver = (v) => v.split("-")[0].split(".").map(Number);
                    const cmp = (a, b) => { for (let i = 0; i < 3; i++)
                        if (a[i] !== b[i]) return a[i] - b[i]; return 0; };
                    const ok = range.split(" ").every((c) => {
                        const m = c.match(/^(>=|<=|>|<|=)?(.*)$/);
                        const d = cmp(semver(have), semver(m[2]));
                        return {">=": d >= 0, "<=": d <= 0, ">": d > 0, "<": d < 0}[m[1]]
                            ?? d === 0; });
                    process.exit(ok ? 0 : 1);' "$installed" "$range" 2>/dev/null; then
                echo "agents: $name is installed ($package)"
                continue
            fi
            npm_missing+=("$package@$range")
            ;;
        pypi)
            venv=$AGENTS/venv/$name
            stamp=$venv/.requirement
            if [ -x "$venv/bin/$bin" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$spec" ]; then
                echo "agents: $name is installed ($spec)"
                continue
            fi
            echo "agents: installing $name ($spec) into .agents/venv/$name"
            rm -rf "$venv"
            if "$PYTHON" -m venv "$venv" \
                && "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
                    "$spec"; then
                echo "$spec" >"$stamp"
            else
                echo "agents: could not install $name ($spec); its tests will skip" >&2
                rm -rf "$venv"
                failed+=("$name")
            fi
            ;;
    esac
done

if [ "${#npm_missing[@]}" -gt 0 ]; then
    if ! command -v npm >/dev/null; then
        echo "agents: npm is not installed; the npm programs' tests will skip" >&2
        failed+=("${npm_missing[@]}")
    else
        echo "agents: installing ${npm_missing[*]} into .agents/npm"
        mkdir -p "$AGENTS/npm"
        # One install for all of them (npm resolves once); the programs ship their native
        # binaries as optional dependencies, and need no install scripts.
        if ! npm install --prefix "$AGENTS/npm" --no-audit --no-fund --loglevel=error \
                "${npm_missing[@]}"; then
            echo "agents: npm could not install ${npm_missing[*]}; their tests will skip" >&2
            failed+=("${npm_missing[@]}")
        fi
    fi
fi

if [ "${#failed[@]}" -gt 0 ]; then
    echo "agents: not installed: ${failed[*]}" >&2
fi
exit 0
