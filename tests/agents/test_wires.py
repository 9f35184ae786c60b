"""The scripted upstream's answers are the providers' own shapes: the official SDKs read
them, whole and streamed, as they read the provider's (so a program that fails against
it fails on the proxy, not on the script)."""

from __future__ import annotations

from dataclasses import dataclass, field

import anthropic
import openai

from tests.agents.script import Call, Seen, Turn
from tests.agents.upstream import ScriptedUpstream
from tests.agents.wire.anthropic import AnthropicWire, signature
from tests.agents.wire.responses import ResponsesWire

TURN = Turn(thinking="Read it first.", text="Reading.",
            calls=(Call("read_file", {"path": "a.py"}, "call_1"),
                   Call("apply_patch", {"input": "*** Begin Patch\n*** End Patch\n"}, "call_2")))


@dataclass
class Always:
    turn: Turn
    seen: list[Seen] = field(default_factory=list)

    def play(self, seen: Seen) -> Turn:
        self.seen.append(seen)
        return self.turn


def test_anthropic_answers_read_whole_and_streamed():
    player = Always(TURN)
    with ScriptedUpstream([AnthropicWire()], player) as upstream:
        client = anthropic.Anthropic(base_url=upstream.url, api_key="k", max_retries=0)
        ask = {"model": "claude-opus-4-8", "max_tokens": 100,
               "thinking": {"type": "enabled", "budget_tokens": 50},
               "tools": [{"name": n, "input_schema": {"type": "object"}}
                         for n in ("read_file", "apply_patch")],
               "messages": [{"role": "user", "content": "go"}]}
        whole = client.messages.create(**ask)
        with client.messages.stream(**ask) as stream:
            streamed = stream.get_final_message()
        counted = client.messages.count_tokens(**{k: ask[k] for k in ("model", "messages")})
    for message in (whole, streamed):
        assert [b.type for b in message.content] == ["thinking", "text", "tool_use", "tool_use"]
        assert message.content[0].signature == signature("Read it first.")
        assert message.content[2].input == {"path": "a.py"}
        assert message.stop_reason == "tool_use"
    assert counted.input_tokens > 0
    assert [s.stream for s in player.seen] == [False, True]
    assert player.seen[0].tools == ("read_file", "apply_patch")


def test_responses_answers_read_whole_and_streamed():
    player = Always(TURN)
    with ScriptedUpstream([ResponsesWire()], player) as upstream:
        client = openai.OpenAI(base_url=f"{upstream.url}/v1", api_key="k", max_retries=0)
        ask = {"model": "gpt-5", "include": ["reasoning.encrypted_content"],
               "tools": [{"type": "function", "name": "read_file", "parameters": {}},
                         {"type": "custom", "name": "apply_patch"}],
               "input": [{"role": "user", "content": "go"}]}
        whole = client.responses.create(**ask)
        with client.responses.stream(**ask) as stream:
            streamed = stream.get_final_response()
    for response in (whole, streamed):
        kinds = [item.type for item in response.output]
        assert kinds == ["reasoning", "message", "function_call", "custom_tool_call"]
        assert response.output[0].encrypted_content == signature("Read it first.")
        assert response.output[3].input == "*** Begin Patch\n*** End Patch\n"
        assert response.output_text == "Reading."
    assert [s.stream for s in player.seen] == [False, True]
