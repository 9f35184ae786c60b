"""The programs' recorded requests sent to the proxy again, without the programs: a
machine without them still tests that the service compacts what Claude Code, Codex,
Gemini CLI, Qwen Code, Aider and mini-swe-agent send (a regression here was every Claude
Code request going upstream uncompacted)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.agents import valid
from tests.agents.checks import FIXTURES
from tests.agents.harness import proxy
from tests.agents.script import Seen, Turn
from tests.agents.upstream import ScriptedUpstream
from tests.agents.wire.anthropic import AnthropicWire
from tests.agents.wire.chat import ChatWire
from tests.agents.wire.gemini import GeminiWire, signature
from tests.agents.wire.responses import ResponsesWire

# fixture -> route, the provider's key header, the wire, the check of what went upstream
CASES: dict[str, tuple[str, dict[str, str], Any, Any]] = {
    "claude-code": ("/v1/messages", {"x-api-key": "sk-ant-k", "anthropic-version": "2023-06-01"},
                    AnthropicWire(), valid.anthropic),
    "codex": ("/v1/responses", {"authorization": "Bearer sk-k"}, ResponsesWire(),
              valid.responses),
    # Gemini's streams by its path: the same request on generateContent is read whole.
    "gemini-cli": ("/v1beta/models/gemini-2.5-pro:generateContent",
                   {"x-goog-api-key": "gemini-k"}, GeminiWire(), valid.gemini),
    "qwen-code": ("/v1/chat/completions", {"authorization": "Bearer sk-k"}, ChatWire(),
                  valid.chat),
    "aider": ("/v1/chat/completions", {"authorization": "Bearer sk-k"}, ChatWire(),
              valid.chat),
    "mini-swe-agent": ("/v1/chat/completions", {"authorization": "Bearer sk-k"}, ChatWire(),
                       valid.chat),
}


def _signed_again(body: dict[str, Any]) -> dict[str, Any]:
    """A Gemini fixture's calls with their thought signatures made again: recording
    rewrote the scratch folder in their arguments, which the signatures were made of."""
    for content in body.get("contents") or []:
        for part in content.get("parts") or []:
            if "thoughtSignature" in part and "functionCall" in part:
                part["thoughtSignature"] = signature(part["functionCall"])
    return body


class Done:
    def play(self, seen: Seen) -> Turn:
        return Turn(text="Done.")


@pytest.mark.parametrize("name", CASES)
def test_a_recorded_request_is_compacted_and_goes_upstream_valid(name: str) -> None:
    route, headers, wire, check = CASES[name]
    body = _signed_again(json.loads((FIXTURES / f"{name}.json").read_text()))
    with ScriptedUpstream([wire], Done()) as upstream, proxy(upstream.url) as service:
        # As recorded, a stream: read whole here, the same compaction either way.
        whole = body if ":generateContent" in route else {**body, "stream": False}
        answer = httpx.post(f"{service.url}{route}", json=whole,
                            headers=headers, timeout=60)
    assert answer.status_code == 200, answer.text
    assert answer.headers["x-contextsynth-compaction"] == "compacted"
    before, after = (int(answer.headers[f"x-contextsynth-tokens-{w}"])
                     for w in ("before", "after"))
    assert after < before * 0.7
    [sent] = upstream.calls
    assert check(sent.body) == []
    assert sent.seen is not None
    # Something was cut: the model is offered the tool that reads it back, on every route.
    assert "contextsynth_expand" in sent.seen.tools
