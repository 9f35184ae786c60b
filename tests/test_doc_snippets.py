"""The docs' SDK snippets run as written: each Python block that points a provider's SDK
at the service (the README's proxy in three lines, and docs/proxy.md's), with
localhost:8080 replaced by a service started here, in front of fake providers. The
client a snippet makes then sends one request, which must come back through the proxy.
(tests/test_readme.py runs the curl examples, the agent loops and the client's.)"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import docs
from tests.support.fake_gemini import FakeGemini
from tests.support.fake_upstream import FakeUpstream
from tests.support.subprocess_server import running_service

_KEYS = {"OPENAI_API_KEY": "sk-test", "ANTHROPIC_API_KEY": "sk-ant-test",
         "GEMINI_API_KEY": "gm-test"}


@pytest.fixture(scope="module")
def proxy() -> Iterator[tuple[str, FakeUpstream, FakeGemini]]:
    with FakeUpstream() as upstream, FakeGemini() as gemini:
        env = {"CONTEXTSYNTH_PROXY_OPENAI_URL": f"{upstream.url}/v1",
               "CONTEXTSYNTH_PROXY_ANTHROPIC_URL": upstream.url,
               "CONTEXTSYNTH_PROXY_GEMINI_URL": gemini.url}
        with running_service(env) as url:
            yield url, upstream, gemini


def _blocks(title: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", docs.section(title), re.DOTALL)


def _run(code: str, url: str, names: dict[str, Any] | None = None) -> dict[str, Any]:
    """The snippet, as written but for the service's address, in a namespace of its own
    (or the one the snippet before it left: the page reads on from there)."""
    assert "localhost:8080" in code
    namespace = names if names is not None else {}
    exec(compile(code.replace("http://localhost:8080", url), "<snippet>", "exec"), namespace)
    return namespace


def _openai_call(client: Any) -> None:
    answer = client.chat.completions.with_raw_response.create(
        model="gpt-4o", messages=[{"role": "user", "content": "Book the 9:40 to Boston."}])
    assert answer.headers["x-contextsynth-compaction"] in ("compacted", "unchanged")


def _anthropic_call(client: Any) -> Any:
    answer = client.messages.with_raw_response.create(
        model="claude-opus-4-6", max_tokens=256,
        messages=[{"role": "user", "content": "Book the 9:40 to Boston."}])
    assert answer.headers["x-contextsynth-compaction"] in ("compacted", "unchanged")
    return answer


@pytest.fixture(autouse=True)
def _provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in _KEYS.items():  # the keys each snippet says its SDK reads
        monkeypatch.setenv(name, value)


def test_the_readmes_proxy_in_three_lines_runs(proxy):
    url, upstream, _ = proxy
    [code] = _blocks("The proxy in three lines")
    _openai_call(_run(code, url)["client"])
    assert upstream.received[-1].path == "/v1/chat/completions"


def test_the_proxy_pages_sdk_snippets_run(proxy):
    url, upstream, gemini = proxy
    openai_code, anthropic_code = _blocks("Pointing an SDK at it")
    _openai_call(_run(openai_code, url)["client"])
    assert upstream.received[-1].headers["authorization"] == f"Bearer {_KEYS['OPENAI_API_KEY']}"
    names = _run(anthropic_code, url)
    _anthropic_call(names["client"])
    got = upstream.received[-1].headers  # x-api-key, or a bearer token in newer SDKs
    assert (got.get("x-api-key") or got["authorization"].removeprefix("Bearer ")) == \
        _KEYS["ANTHROPIC_API_KEY"]
    # The cache-breakpoints client reads on from the Anthropic snippet (its import).
    [marks] = _blocks("Anthropic cache breakpoints")
    answer = _anthropic_call(_run(marks, url, names)["client"])
    assert answer.headers["x-contextsynth-cache-breakpoints"].isdigit()
    # Gemini's makes its call itself.
    [gemini_code] = _blocks("Gemini")
    reply = _run(gemini_code, url)["reply"]
    assert reply.candidates and gemini.received[-1].path.endswith(
        "/models/gemini-2.5-flash:generateContent")
    assert gemini.received[-1].headers["x-goog-api-key"] == _KEYS["GEMINI_API_KEY"]


# The blocks that configure the service by exporting CONTEXTSYNTH_* variables (and
# then, maybe, start it): what they export is what the settings take.
def _configuring_blocks() -> list[str]:
    blocks = re.findall(r"```sh\n(.*?)```", docs.text(), re.DOTALL)
    return [b for b in blocks if re.search(r"^export CONTEXTSYNTH_", b, re.MULTILINE)
            and "curl " not in b]  # those with a request are run whole (test_readme)


def test_every_block_that_configures_the_service_sets_what_the_settings_take(monkeypatch):
    from app.settings import Settings

    blocks = _configuring_blocks()
    assert len(blocks) >= 3
    for block in blocks:
        exports = "\n".join(line for line in block.replace("\\\n", " ").split("\n")
                            if not line.startswith(("contextsynth serve", "#")))
        done = subprocess.run(
            ["bash", "-c", "set -euo pipefail\n" + exports + "\n" + sys.executable +
             " -c 'import json, os; print(json.dumps({k: v for k, v in os.environ.items()"
             " if k.startswith(\"CONTEXTSYNTH_\")}))'"],
            capture_output=True, text=True, timeout=60, cwd=docs.ROOT,
            env={**{k: v for k, v in os.environ.items() if not k.startswith("CONTEXTSYNTH_")},
                 "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"})
        assert done.returncode == 0, f"{block}\n---\n{done.stderr[-800:]}"
        exported = json.loads(done.stdout)
        assert exported, block
        with monkeypatch.context() as patched:
            for name, value in exported.items():
                patched.setenv(name, value)
            settings = Settings()
        for name in exported:
            field = name.removeprefix("CONTEXTSYNTH_").lower()
            assert getattr(settings, field) not in (None, [], {}), name


def _unsaid(code: str, prose: str) -> list[str]:
    """What a script needs that the text before it does not say: the environment
    variables it reads, the packages it imports from outside the standard library, and
    the clone's root when it opens a file of the checkout by a relative path."""
    needs = set(re.findall(r"os\.environ(?:\.get)?[\[(]\"(\w+)\"", code))
    needs |= {name for name in re.findall(r"^(?:import|from) (\w+)", code, re.MULTILINE)
              if name not in sys.stdlib_module_names and name != "httpx2"}
    if re.search(r"open\(\"(corpus|examples)/", code):
        needs.add("clone's root")
    return sorted(need for need in needs if need not in prose)


def test_the_mcp_client_script_runs_from_the_clones_root_with_what_it_says(tmp_path):

    section = docs.section("MCP: the jobs as tools")
    prose, code = re.search(r"From Python, with the SDK's client:(.*?)```python\n(.*?)```",
                            section, re.DOTALL).groups()
    assert _unsaid(code, prose) == []
    script = tmp_path / "mcp_client.py"
    script.write_text(code)
    from app.api.auth import hash_key

    keys = {"CONTEXTSYNTH_API_KEYS": json.dumps({hash_key("s3cret"): "team-a"})}
    for env, key in (({}, None), (keys, "s3cret")):
        with running_service(env) as url:
            done = subprocess.run(
                [sys.executable, str(script)], cwd=docs.ROOT, capture_output=True, text=True,
                timeout=120, env={**{k: v for k, v in os.environ.items()
                                     if not k.startswith("CONTEXTSYNTH_")},
                                  "CONTEXTSYNTH_URL": url,
                                  **({"CONTEXTSYNTH_API_KEY": key} if key else {})})
        assert done.returncode == 0, done.stderr[-2000:]
        assert re.fullmatch(r"\d+ messages behind cs_\S+\n", done.stdout), done.stdout



@pytest.mark.anyio
async def test_the_rate_limit_problem_the_operations_page_shows_is_what_a_429_says(make_app):
    from app.api.auth import hash_key
    from tests.conftest import serve

    page = (docs.DOCS / "operations.md").read_text()
    [shown] = [json.loads(block) for block in re.findall(r"```json\n(.*?)```", page, re.DOTALL)
               if "rate-limited" in block]
    limit = shown["limit_value"]
    app = make_app(api_keys={hash_key("k-a"): "team-a"},
                   rate_limits={"team-a": {shown["limit"]: limit}})
    body = {"messages": [{"role": "user", "content": "hi"}]}
    async with serve(app) as client:
        for _ in range(2 * limit):  # a burst of the whole limit, then (the bucket
            answer = await client.post(shown["instance"], json=body,  # refilling) a 429
                                       headers={"authorization": "Bearer k-a"})
            if answer.status_code != 200:
                break
    assert answer.status_code == 429
    problem = answer.json()
    assert set(problem) == set(shown)
    same = ("type", "status", "title", "limit", "limit_value", "retry_after", "instance")
    assert {k: problem[k] for k in same} == {k: shown[k] for k in same}
    assert problem["detail"].startswith(shown["detail"].removesuffix("..."))
