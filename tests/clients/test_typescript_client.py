"""The TypeScript client (clients/typescript), built as a fresh clone builds it: its types
are what openapi.yaml generates today, its node tests pass against real services over
loopback (one with a fake LLM provider and a fake OpenAI upstream for proxy mode, one with
API keys), and the example docs/agents.md shows compiles and runs in a project that
depends on it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from app.api.auth import hash_key
from tests.support import docs
from tests.support.fake_llm import FakeLLM
from tests.support.fake_upstream import FakeUpstream
from tests.support.subprocess_server import running_service

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "clients/typescript"
NPM = shutil.which("npm")

pytestmark = pytest.mark.skipif(NPM is None or shutil.which("node") is None,
                                reason="node and npm are needed")

API_KEY = "ts-client-e2e-key"


def _npm(cwd: Path, *args: str, env: dict[str, str] | None = None,
         timeout: float = 600) -> subprocess.CompletedProcess[str]:
    assert NPM is not None
    return subprocess.run([NPM, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "npm_config_fund": "false",
                                                "npm_config_update_notifier": "false",
                                                **(env or {})})


def _output(done: subprocess.CompletedProcess[str]) -> str:
    return f"exit {done.returncode}\n--- stdout\n{done.stdout[-20_000:]}\n" \
           f"--- stderr\n{done.stderr[-5_000:]}"


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package copied beside the spec, as a clone lays them out but without whatever
    a developer built here (node_modules, dist), then installed from its lock file (npm
    test builds it: its pretest script runs the build, then compiles the tests)."""
    root = tmp_path_factory.mktemp("ts-client")
    copy = root / "clients/typescript"
    shutil.copytree(PACKAGE, copy,
                    ignore=shutil.ignore_patterns("node_modules", "dist", "test-dist"))
    shutil.copy(ROOT / "openapi.yaml", root / "openapi.yaml")
    installed = _npm(copy, "ci", "--no-audit", "--loglevel=error")
    assert installed.returncode == 0, _output(installed)
    return copy


@pytest.fixture(scope="module")
def services() -> Iterator[dict[str, str]]:
    """The environment that points the node tests at their services."""
    providers = [{"name": "local", "kind": "openai", "base_url": "", "model": "fake-1",
                  "api_key_env": "TS_CLIENT_E2E_LLM_KEY"}]
    keys = json.dumps({hash_key(API_KEY): "ts-client"})
    with ExitStack() as stack:
        llm = stack.enter_context(FakeLLM())
        upstream = stack.enter_context(FakeUpstream())
        providers[0]["base_url"] = llm.base_url
        plain = stack.enter_context(running_service(
            {"CONTEXTSYNTH_LLM_PROVIDERS": json.dumps(providers),
             "TS_CLIENT_E2E_LLM_KEY": "sk-e2e",
             "CONTEXTSYNTH_PROXY_OPENAI_URL": f"{upstream.url}/v1"}, ready_path="/readyz"))
        keyed = stack.enter_context(running_service({"CONTEXTSYNTH_API_KEYS": keys}))
        yield {"CONTEXTSYNTH_URL": plain, "CONTEXTSYNTH_LLM": "1", "CONTEXTSYNTH_PROXY": "1",
               "CONTEXTSYNTH_KEYED_URL": keyed, "CONTEXTSYNTH_KEYED_KEY": API_KEY,
               "CONTEXTSYNTH_CORPUS": str(ROOT / "corpus/transcripts")}


def test_the_committed_types_are_what_the_spec_generates(package: Path) -> None:
    checked = _npm(package, "run", "check:schema")
    assert checked.returncode == 0, _output(checked)


def test_the_node_tests_pass_against_the_service(package: Path,
                                                 services: dict[str, str]) -> None:
    done = _npm(package, "test", env=services)
    assert done.returncode == 0, _output(done)
    # Every test ran: none skipped for a service or setting it did not find.
    assert "# SKIP" not in done.stdout, _output(done)
    counts = {name: int(n) for name, n in re.findall(r"^# (\w+) (\d+)$", done.stdout,
                                                     re.MULTILINE)}
    assert counts["tests"] > 0 and counts["pass"] == counts["tests"], _output(done)
    assert counts["fail"] == counts["skipped"] == counts["todo"] == 0, _output(done)


def test_the_agents_page_example_runs_in_a_project_that_depends_on_the_package(
        package: Path, services: dict[str, str], tmp_path: Path) -> None:
    """The example of docs/agents.md as written, in a project of its own that depends on
    the package by path (as the package's README says), type-checked and compiled by the
    package's own TypeScript, then run by node against the service, without a key and
    with one; it prints the answer it got."""
    [example] = re.findall(r"```typescript\n(.*?)```",
                           docs.section("TypeScript: `@contextsynth/client`"), re.DOTALL)
    built = _npm(package, "run", "build")
    assert built.returncode == 0, _output(built)
    project = tmp_path / "project"
    project.mkdir()
    # An ES module, as the example's top-level await needs.
    (project / "package.json").write_text(json.dumps({"name": "agent", "private": True,
                                                      "type": "module"}))
    installed = _npm(project, "install", "--no-audit", "--loglevel=error", str(package))
    assert installed.returncode == 0, _output(installed)
    # The example ends at the answer; what a user would look at next is its messages.
    (project / "example.ts").write_text(example + "console.log(JSON.stringify(compact));\n")
    # The example reads process.env, so Node's types: the package's own (a project of a
    # user's would install @types/node itself; here that would mean the network).
    compiled = subprocess.run(
        ["node", str(package / "node_modules/typescript/bin/tsc"), "--strict",
         "--target", "es2022", "--module", "nodenext", "--moduleResolution", "nodenext",
         "--typeRoots", str(package / "node_modules/@types"), "--types", "node",
         "example.ts"], cwd=project, capture_output=True, text=True, timeout=120)
    assert compiled.returncode == 0, _output(compiled)
    history_text = re.search(r'content: "([^"]+)"', example)
    assert history_text, example
    plain = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXTSYNTH_")}
    for env in ({"CONTEXTSYNTH_URL": services["CONTEXTSYNTH_URL"]},
                {"CONTEXTSYNTH_URL": services["CONTEXTSYNTH_KEYED_URL"],
                 "CONTEXTSYNTH_API_KEY": services["CONTEXTSYNTH_KEYED_KEY"]}):
        done = subprocess.run(["node", "example.js"], cwd=project, capture_output=True,
                              text=True, timeout=60, env={**plain, **env})
        assert done.returncode == 0, _output(done)
        answer = json.loads(done.stdout)
        # The user's message comes back as sent, the first of the context to send on.
        assert answer["messages"][0]["content"] == history_text[1], answer
        assert answer["stats"]["tokens_after"] <= answer["stats"]["tokens_before"], answer
