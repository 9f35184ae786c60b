import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from app.cli.replay import free_port
from app.settings import Settings
from tests.support import docs
from tests.support.subprocess_server import running_service

ROOT = docs.ROOT
# The README (the front page) and the pages of docs/ it links: what they show must run.
DOCS = docs.text()


def test_every_setting_is_documented():
    table = (docs.DOCS / "configuration.md").read_text()
    missing = [name for name in Settings.model_fields
               if f"| `CONTEXTSYNTH_{name.upper()}` |" not in table]
    assert missing == []


def test_the_configuration_table_is_what_its_script_writes():
    # Defaults and rows as the Settings model has them (the meanings as the page says).
    script = docs.settings_table_script()
    page = script.PAGE.read_text()
    assert script.render(page) == page, "run python scripts/settings_table.py"


def test_every_endpoint_has_a_section():
    from app.cli import openapi_document

    titles = {mark.title for mark in docs.headings((docs.DOCS / "api.md").read_text())}
    for path, operations in openapi_document()["paths"].items():
        if path not in ("/healthz", "/readyz", "/metrics"):
            for method in operations:
                assert f"`{method.upper()} {path}`" in titles, path


def _shell_examples() -> list[str]:
    """The shell blocks of the README and docs/ that call the service."""
    blocks = re.findall(r"```sh\n(.*?)```", DOCS, re.DOTALL)
    return [b for b in blocks if "curl -s localhost:8080" in b]


def _run(block: str, url: str, cwd: Path) -> None:
    script = block.replace("curl -s localhost:8080", f"curl -s --fail-with-body {url}")
    result = subprocess.run(["bash", "-c", "set -euo pipefail\n" + script], cwd=cwd,
                            capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PATH": f"{Path(sys.executable).parent}:"
                                 f"{os.environ['PATH']}"})
    assert result.returncode == 0, f"{block}\n---\n{result.stdout[-800:]}{result.stderr[-800:]}"
    for line in result.stdout.splitlines():  # every answer is JSON, not a problem
        if line.startswith("{"):
            assert '"status":4' not in line.replace(" ", "") and '"status":5' not in \
                line.replace(" ", ""), line[:300]


@pytest.mark.skipif(shutil.which("curl") is None, reason="the examples use curl")
def test_every_curl_example_runs_as_written(tmp_path):
    examples = _shell_examples()
    assert len(examples) >= 10
    keyed = [b for b in examples if "contextsynth serve &" in b]
    with running_service() as url:
        for block in examples:
            if block not in keyed:
                _run(block, url, ROOT)
    for block in keyed:  # the API-key example starts its own service with the key
        export = next(line for line in block.splitlines() if line.startswith("export "))
        keys = subprocess.run(
            ["bash", "-c", f"{export}\nprintf %s \"$CONTEXTSYNTH_API_KEYS\""],
            capture_output=True, text=True, check=True,
            env={**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"},
        ).stdout
        with running_service(env={"CONTEXTSYNTH_API_KEYS": keys}) as url:
            _run(block.replace("contextsynth serve &", "true").replace(
                "corpus/", f"{ROOT}/corpus/"), url, tmp_path)


def test_the_python_agent_loop_runs_against_a_provider(tmp_path):
    from tests.support.fake_llm import FakeLLM

    [loop] = re.findall(r"```python\n(.*?)```", docs.section("From an agent"), re.DOTALL)
    script = tmp_path / "loop.py"
    script.write_text(loop)
    with FakeLLM() as provider, running_service() as url:
        result = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True,
                                text=True, timeout=120, env={
                                    **os.environ, "CONTEXTSYNTH_URL": url,
                                    "OPENAI_BASE_URL": provider.base_url,
                                    "OPENAI_API_KEY": "sk-test"})
        assert result.returncode == 0, result.stderr[-2000:]
        assert len(provider.requests) == 3
        # the provider got the compact context (older turns in a note), not the raw history
        sent = provider.requests[-1]["messages"]
        assert any(str(m.get("content")).startswith("[contextsynth] Earlier work") for m in sent)
    assert [line.split()[0] for line in result.stdout.splitlines()] == ["0", "1", "2"]


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_typescript_agent_step_runs_against_a_provider(tmp_path):
    from tests.support.fake_llm import FakeLLM

    [code] = re.findall(r"```typescript\n(.*?)```", docs.section("From an agent"), re.DOTALL)
    # Node runs JavaScript: drop the example's type annotations, then call it once.
    script = re.sub(r"^type \w+ = .*;\n", "", code, flags=re.MULTILINE)
    script = re.sub(r"\): Promise<\w+> \{", ") {", script)
    script = re.sub(r"\((\w+): \w+\[\]\)", r"(\1)", script)
    history = [json.loads(line) for line in (
        ROOT / "corpus/transcripts/tau-airline-gpt4o-task002-trial1.jsonl").read_text()
        .splitlines()]
    (tmp_path / "history.json").write_text(json.dumps(history))
    script += ("\nconst history = JSON.parse(require('fs').readFileSync('history.json'));\n"
               "step(history).then((m) => console.log(JSON.stringify(m)));\n")
    (tmp_path / "step.cjs").write_text(script)
    with FakeLLM() as provider, running_service() as url:
        result = subprocess.run(["node", "step.cjs"], cwd=tmp_path, capture_output=True,
                                text=True, timeout=60, env={
                                    **os.environ, "CONTEXTSYNTH_URL": url,
                                    "OPENAI_BASE_URL": provider.base_url,
                                    "OPENAI_API_KEY": "sk-test"})
        assert result.returncode == 0, result.stderr[-2000:]
        assert json.loads(result.stdout)["role"] == "assistant"
        sent = provider.requests[-1]["messages"]
        assert len(sent) < len(history)
        assert any(str(m.get("content")).startswith("[contextsynth] Earlier work") for m in sent)


@pytest.mark.skipif(shutil.which("curl") is None, reason="the quick start uses curl")
def test_the_quick_start_example_compacts_as_the_readme_says():
    quick = docs.section("Quick start")
    [block] = [b for b in re.findall(r"```sh\n(.*?)```", quick, re.DOTALL)
               if "/synthesize" in b]
    url = "curl -s localhost:8080"
    with running_service() as base:
        answer = subprocess.run(
            ["bash", "-c", block.replace(url, f"curl -s --fail-with-body {base}")],
            cwd=ROOT, capture_output=True, text=True, timeout=120, check=True).stdout
        result = json.loads(answer)
        handle = result["receipt"]["dropped"][0]["handle"]
        expanded = subprocess.run(["curl", "-s", "--fail-with-body", f"{base}/expand/{handle}"],
                                  capture_output=True, text=True, timeout=60, check=True)
    assert result["compacted"] is True
    stats = result["stats"]
    assert stats["reduction"] >= 0.3  # a real reduction, not a token or two
    # Every figure the README quotes is the one the service gives.
    quick = " ".join(quick.split())  # as read, not as wrapped
    for field in ("tokens_before", "tokens_after", "messages_before", "messages_after"):
        quoted = re.search(rf"(\d+) (?:tokens |messages )?\(`{field}`\)", quick)
        assert quoted, f"the quick start quotes no {field}"
        assert int(quoted[1]) == stats[field], field
    # The answer reads as the README describes it.
    contents = [str(m.get("content")) for m in result["messages"]]
    for quoted in re.findall(r"`(\[contextsynth\] [^`]+?):?`", quick):
        assert any(c.startswith(quoted.rstrip(":")) for c in contents), quoted
    kept = re.search(r"gives back the (\d+) messages", quick)
    assert kept and len(json.loads(expanded.stdout)["messages"]) == int(kept[1])


def _unsaid(code: str, prose: str) -> list[str]:
    """What a Python snippet needs that the text before it does not say: the environment
    variables it reads, the packages it imports from outside the standard library, and
    the clone's root when it opens a file of the checkout by a relative path."""
    needs = set(re.findall(r"os\.environ(?:\.get)?[\[(]\"(\w+)\"", code))
    needs |= {name for name in re.findall(r"^(?:import|from) (\w+)", code, re.MULTILINE)
              if name not in sys.stdlib_module_names}
    if re.search(r"open\(\"(corpus|examples)/", code):
        needs.add("clone's root")
    return sorted(need for need in needs if need not in prose)


def test_the_python_agent_loop_says_what_it_needs_to_run():
    section = docs.section("From an agent")
    prose, loop = re.search(r"(.*?)```python\n(.*?)```", section, re.DOTALL).groups()
    assert _unsaid(loop, prose) == []


def test_the_python_client_examples_run_against_the_service_CONTEXTSYNTH_URL_names(tmp_path):
    pages = [docs.section("Python: `contextsynth-client`"),
             (ROOT / "clients/python/README.md").read_text().split("## Use", 1)[1]]
    examples = [re.findall(r"```python\n(.*?)```", page, re.DOTALL)[0] for page in pages]
    with running_service() as url:
        for number, example in enumerate(examples):
            script = tmp_path / f"example{number}.py"
            script.write_text(example)
            done = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True,
                                  text=True, timeout=120,
                                  env={**os.environ, "CONTEXTSYNTH_URL": url,
                                       # this checkout's client, as CI installs it
                                       "PYTHONPATH": str(ROOT / "clients/python/src")})
            assert done.returncode == 0, f"{example}\n---\n{done.stderr[-1500:]}"


def _fresh_clone(into: Path) -> Path:
    """This checkout as a clone of it would be: the files git has (as they are now, edits
    and new files included), without .venv or anything built."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], cwd=ROOT, capture_output=True,
                            check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, into / name)
    return into


@pytest.mark.skipif(shutil.which("curl") is None or shutil.which("git") is None
                    or not (ROOT / ".git").exists(), reason="needs curl and a git checkout")
def test_the_quick_start_on_a_fresh_clone_answers_before_the_compile_and_compacts(tmp_path):
    """scripts/serve.sh on a clone with nothing installed, then the README's example: the
    service answers with the engine interpreted while the compiled one builds."""
    clone = _fresh_clone(tmp_path / "clone")
    port = free_port()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CONTEXTSYNTH_", "VIRTUAL_ENV"))}
    env["PYTHON"] = getattr(sys, "_base_executable", sys.executable)
    log = tmp_path / "serve.log"
    started = time.monotonic()
    with log.open("w") as out:
        # Its own process group: the service and the compile it left running stop together.
        serving = subprocess.Popen(["bash", "scripts/serve.sh", "--port", str(port)],
                                   cwd=clone, env=env, stdout=out, stderr=out,
                                   start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(3600):  # a guard against a hang, not a measure: 30 minutes
            assert serving.poll() is None, log.read_text()[-3000:]
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.5)
        else:
            pytest.fail(f"no answer from {base}/healthz: {log.read_text()[-3000:]}")
        [block] = [b for b in re.findall(r"```sh\n(.*?)```", docs.section("Quick start"),
                                         re.DOTALL) if "/synthesize" in b]
        answer = subprocess.run(["bash", "-c", block.replace("localhost:8080", base)],
                                cwd=clone, capture_output=True, text=True, timeout=120,
                                check=True).stdout
        first_answer = time.monotonic() - started
        metrics = httpx.get(f"{base}/metrics", timeout=10).text
    finally:
        os.killpg(serving.pid, signal.SIGTERM)
        serving.wait(timeout=60)
    assert json.loads(answer)["compacted"] is True
    # It did not wait for the compile: that runs beside it, for the next start.
    assert 'contextsynth_build_info{engine="pure"' in metrics
    said = log.read_text()
    assert "setup: serving with the interpreted engine while the compiled one builds" in said
    print(f"fresh clone to the quick start's answer: {first_answer:.0f} s")  # -s shows it
