"""contextsynth chained with the LiteLLM proxy (``litellm[proxy]``, run as its own
process from its venv under ``.agents/``), both ways round:

- LiteLLM in front: a model of LiteLLM's config whose ``api_base`` is contextsynth, so
  a request to LiteLLM reaches the provider compacted;
- LiteLLM behind: contextsynth's ``CONTEXTSYNTH_PROXY_OPENAI_URL`` is LiteLLM, which
  routes the model to the provider.

Each way, a long agent run from the corpus sent once arrives at the scripted upstream
compacted, and LiteLLM's answer is the upstream's.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.agents import valid
from tests.agents.harness import proxy
from tests.agents.programs import venv_bin
from tests.agents.script import Seen, Turn
from tests.agents.upstream import ScriptedUpstream
from tests.agents.wire.chat import ChatWire
from tests.support.corpus import load_named
from tests.support.redis_server import free_port

REQUIREMENT = "litellm[proxy]"
# LiteLLM's own key (its proxy refuses to start without a strong one): what a caller
# sends LiteLLM, and so what contextsynth, when in front, passes on as the provider key.
MASTER_KEY = "sk-" + "5c1e" * 8
ANSWER = "Checked: the fix holds."
RUN = "minisweagent-ds-chat-dev-pydicom__pydicom-901"  # a long run of tool calls


class Answers:
    """A model that answers every request with the same text."""

    def play(self, seen: Seen) -> Turn:
        return Turn(text=ANSWER)


@contextmanager
def litellm_proxy(config: dict[str, object], folder: Path) -> Iterator[str]:
    """The LiteLLM proxy with ``config``, on a free port; yields its base URL."""
    litellm = venv_bin("litellm", REQUIREMENT, "litellm")
    (folder / "config.json").write_text(json.dumps(config))
    port = free_port()
    log = open(folder / "litellm.log", "wb")  # noqa: SIM115
    env = {"PATH": os.environ["PATH"], "HOME": str(folder), "LANG": "C.UTF-8",
           "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_TELEMETRY": "False",
           "DISABLE_SCHEMA_UPDATE": "True"}
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


def _model(name: str, base: str) -> dict[str, object]:
    return {"model_name": name, "litellm_params": {"model": "openai/gpt-4o", "api_base": base,
                                                   "api_key": "sk-scripted"}}


def test_litellm_in_front_of_and_behind_contextsynth(tmp_path: Path) -> None:
    messages = load_named(RUN)
    with ScriptedUpstream([ChatWire()], Answers()) as upstream, \
            proxy(upstream.url) as front_of_upstream:
        config = {"model_list": [_model("via-contextsynth", f"{front_of_upstream.url}/v1"),
                                 _model("direct", f"{upstream.url}/v1")],
                  "litellm_settings": {"drop_params": True, "telemetry": False},
                  "general_settings": {"master_key": MASTER_KEY}}
        with litellm_proxy(config, tmp_path) as litellm, \
                proxy(upstream.url, proxy_openai_url=f"{litellm}/v1") as in_front:
            # LiteLLM in front: its model's api_base is contextsynth.
            answer = httpx.post(f"{litellm}/v1/chat/completions", timeout=120,
                                headers={"authorization": f"Bearer {MASTER_KEY}"},
                                json={"model": "via-contextsynth", "messages": messages})
            assert answer.status_code == 200, answer.text
            assert answer.json()["choices"][0]["message"]["content"] == ANSWER
            [through] = [a for a in front_of_upstream.answered
                         if a.path == "/v1/chat/completions"]
            assert through.compaction == "compacted", through.headers
            first = upstream.calls[-1].body
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
