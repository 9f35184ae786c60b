"""contextsynth chained with the LiteLLM proxy (``litellm[proxy]``, run as its own
process from its venv under ``.agents/``), both ways round:

- LiteLLM in front: a model of LiteLLM's config whose ``api_base`` is contextsynth, so
  a request to LiteLLM reaches the provider compacted;
- LiteLLM behind: contextsynth's ``CONTEXTSYNTH_PROXY_OPENAI_URL`` is LiteLLM, which
  routes the model to the provider.

Each way, a long agent run from the corpus sent once arrives at the scripted upstream
compacted, and LiteLLM's answer is the upstream's. The configuration and the URL are the
ones docs/agents.md shows ("Chaining with LiteLLM"), read from the page, with only the
addresses changed to the ones started here.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import yaml

from app.cli.replay import free_port
from tests.agents import valid
from tests.agents.harness import proxy
from tests.agents.programs import venv_bin
from tests.agents.script import Seen, Turn
from tests.agents.upstream import ScriptedUpstream
from tests.agents.wire.chat import ChatWire
from tests.support import docs
from tests.support.corpus import load_named

REQUIREMENT = "litellm[proxy]"
# LiteLLM's own key (its proxy refuses to start without a strong one; the page's config
# has none, so it comes as LITELLM_MASTER_KEY, as the page says it may): what a caller
# sends LiteLLM, and so what contextsynth, when in front, passes on as the provider key.
MASTER_KEY = "sk-" + "5c1e" * 8
# The provider key the page's config reads from the environment (os.environ/...).
PROVIDER_KEY = "sk-scripted"
# The addresses the page writes: the service's, and LiteLLM's.
SERVICE = "http://localhost:8080"
LITELLM = "http://localhost:4000"
ANSWER = "Checked: the fix holds."
RUN = "minisweagent-ds-chat-dev-pydicom__pydicom-901"  # a long run of tool calls


class Answers:
    """A model that answers every request with the same text."""

    def play(self, seen: Seen) -> Turn:
        return Turn(text=ANSWER)


@contextmanager
def litellm_proxy(config: dict[str, Any], folder: Path) -> Iterator[str]:
    """The LiteLLM proxy with ``config``, on a free port; yields its base URL."""
    litellm = venv_bin("litellm", REQUIREMENT, "litellm")
    (folder / "config.json").write_text(json.dumps(config))
    port = free_port()
    log = open(folder / "litellm.log", "wb")  # noqa: SIM115
    env = {"PATH": os.environ["PATH"], "HOME": str(folder), "LANG": "C.UTF-8",
           "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_TELEMETRY": "False",
           "DISABLE_SCHEMA_UPDATE": "True", "LITELLM_MASTER_KEY": MASTER_KEY,
           "OPENAI_API_KEY": PROVIDER_KEY}
    process = subprocess.Popen([str(litellm), "--config", str(folder / "config.json"),
                                "--host", "127.0.0.1", "--port", str(port)],
                               cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180  # it imports a great deal
        while True:
            try:
                if httpx.get(f"{url}/health/liveliness", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("the LiteLLM proxy did not start:\n"
                                     + (folder / "litellm.log").read_text()[-3000:])
            time.sleep(0.5)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def _documented() -> tuple[dict[str, Any], str]:
    """The LiteLLM config docs/agents.md shows for LiteLLM in front, and the
    CONTEXTSYNTH_PROXY_OPENAI_URL it gives for LiteLLM behind."""
    section = docs.section("Chaining with LiteLLM")
    [block] = re.findall(r"^ *```yaml\n(.*?)^ *```", section, re.DOTALL | re.MULTILINE)
    [behind] = re.findall(r"`CONTEXTSYNTH_PROXY_OPENAI_URL=(\S+)`", section)
    config = yaml.safe_load(textwrap.dedent(block))
    assert isinstance(config, dict), block
    return config, behind


def test_litellm_in_front_of_and_behind_contextsynth(tmp_path: Path) -> None:
    messages = load_named(RUN)
    config, behind = _documented()
    [model] = config["model_list"]
    params = model["litellm_params"]
    assert params["api_base"].startswith(SERVICE) and behind.startswith(LITELLM)
    with ScriptedUpstream([ChatWire()], Answers()) as upstream, \
            proxy(upstream.url) as front_of_upstream:
        params["api_base"] = params["api_base"].replace(SERVICE, front_of_upstream.url)
        # For LiteLLM behind, a model that goes to the provider directly.
        config["model_list"].append({"model_name": "direct", "litellm_params": {
            **params, "api_base": f"{upstream.url}/v1"}})
        with litellm_proxy(config, tmp_path) as litellm, \
                proxy(upstream.url, proxy_openai_url=behind.replace(LITELLM, litellm)) \
                as in_front:
            # LiteLLM in front: its model's api_base is contextsynth.
            answer = httpx.post(f"{litellm}/v1/chat/completions", timeout=120,
                                headers={"authorization": f"Bearer {MASTER_KEY}"},
                                json={"model": model["model_name"], "messages": messages})
            assert answer.status_code == 200, answer.text
            assert answer.json()["choices"][0]["message"]["content"] == ANSWER
            [through] = [a for a in front_of_upstream.answered
                         if a.path == "/v1/chat/completions"]
            assert through.compaction == "compacted", through.headers
            first = upstream.calls[-1].body
            # The key the config reads from the environment reached the provider.
            assert upstream.calls[-1].headers["authorization"] == f"Bearer {PROVIDER_KEY}"
            # LiteLLM behind: contextsynth's OpenAI URL is LiteLLM, the model its name.
            answer = httpx.post(f"{in_front.url}/v1/chat/completions", timeout=120,
                                headers={"authorization": f"Bearer {MASTER_KEY}"},
                                json={"model": "direct", "messages": messages})
            assert answer.status_code == 200, answer.text
            assert answer.headers["x-contextsynth-compaction"] == "compacted"
            assert answer.json()["choices"][0]["message"]["content"] == ANSWER
            second = upstream.calls[-1].body
    for body in (first, second):
        assert len(json.dumps(body["messages"])) < len(json.dumps(messages)) / 2
        assert "[contextsynth]" in json.dumps(body["messages"])
        assert not valid.chat(body), valid.chat(body)
