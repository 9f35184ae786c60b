"""OpenAI Chat Completions (``POST /v1/chat/completions``), whole or streamed, with
function tools or none (the agents that act in their text: Aider, mini-swe-agent)."""

from __future__ import annotations

import json
from typing import Any

from tests.agents.script import Call, Result, Seen, Turn, flatten, new_id
from tests.agents.wire import Event, Reply, approx_tokens, halves


def text_of(content: Any) -> str:
    """A message's content as text (a string, or a list of text parts)."""
    if isinstance(content, str):
        return content
    return "\n".join(str(p.get("text", "")) for p in content or [] if isinstance(p, dict))


class ChatWire:
    name = "chat"
    paths: tuple[str, ...] = ("/v1/chat/completions",)

    def read(self, path: str, body: dict[str, Any], query: dict[str, str]) -> Seen:
        messages = body.get("messages") or []
        results: list[Result] = []
        for message in reversed(messages):  # the tool messages after the last call
            if message.get("role") != "tool":
                break
            results.insert(0, Result(str(message.get("tool_call_id")),
                                     text_of(message.get("content"))))
        users = [m for m in messages if m.get("role") == "user"]
        system = "\n".join(text_of(m.get("content")) for m in messages
                           if m.get("role") in ("system", "developer"))
        tools = tuple(str((t.get("function") or {}).get("name", ""))
                      for t in body.get("tools") or [])
        return Seen(route=path, model=str(body.get("model", "")), stream=bool(body.get("stream")),
                    tools=tools, system=system, results=tuple(results),
                    last_user=text_of(users[-1].get("content")) if users else "",
                    text=flatten(messages), body=body)

    def other(self, path: str, body: dict[str, Any]) -> Reply | None:
        return None

    def reply(self, seen: Seen, turn: Turn) -> Reply:
        calls = [{"id": c.id or new_id("call_"), "type": "function",
                  "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                 for c in turn.calls]
        message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
        if calls:
            message["tool_calls"] = calls
        finish = "tool_calls" if calls else "stop"
        tokens_in, tokens_out = approx_tokens(seen.text), approx_tokens(json.dumps(message))
        usage = {"prompt_tokens": tokens_in, "completion_tokens": tokens_out,
                 "total_tokens": tokens_in + tokens_out}
        head = {"id": new_id("chatcmpl-"), "created": 1, "model": seen.model,
                "system_fingerprint": "fp_scripted"}
        if not seen.stream:
            return Reply({**head, "object": "chat.completion", "usage": usage, "choices": [
                {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}]})
        return Reply(events=_events(head, turn.text, calls, finish, usage,
                                    bool((seen.body.get("stream_options") or {})
                                         .get("include_usage"))))


def _events(head: dict[str, Any], text: str, calls: list[dict[str, Any]], finish: str,
            usage: dict[str, int], include_usage: bool) -> list[Event]:
    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> Event:
        return (None, {**head, "object": "chat.completion.chunk", "choices": [
            {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}]})

    events = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": part}) for part in halves(text)]
    for index, call in enumerate(calls):
        function = call["function"]
        events.append(chunk({"tool_calls": [{"index": index, "id": call["id"],
                                             "type": "function", "function": {
                                                 "name": function["name"], "arguments": ""}}]}))
        events += [chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
                   for part in halves(function["arguments"])]
    events.append(chunk({}, finish))
    if include_usage:  # the last chunk, with no choices, as OpenAI sends it when asked
        events.append((None, {**head, "object": "chat.completion.chunk", "choices": [],
                              "usage": usage}))
    events.append((None, "[DONE]"))
    return events


def calls_of(message: dict[str, Any]) -> list[Call]:
    """The tool calls of an assistant message of a request (for checks)."""
    return [Call(c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"), c["id"])
            for c in message.get("tool_calls") or []]
