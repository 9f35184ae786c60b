"""Anthropic Messages (``POST /v1/messages``, and ``count_tokens``), whole or streamed."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from tests.agents.script import Call, Result, Seen, Turn, flatten, new_id
from tests.agents.wire import Event, Reply, approx_tokens, halves


def _blocks(content: Any) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else content or []


def _text(content: Any) -> str:
    return "\n".join(b.get("text", "") for b in _blocks(content) if b.get("type") == "text")


def signature(thinking: str) -> str:
    """The signature this upstream gives a thought: the next request must carry the same
    thought with the same signature, or Anthropic refuses it (and so does ``valid``)."""
    return "sig-" + hashlib.sha256(thinking.encode()).hexdigest()[:32]


class AnthropicWire:
    name = "anthropic"
    paths = ("/v1/messages",)

    def read(self, path: str, body: dict[str, Any], query: dict[str, str]) -> Seen:
        messages = body.get("messages") or []
        # Claude Code ends some requests with a system message (a reminder) after the
        # tool results: the results are those of the last user or assistant message.
        turns = [m for m in messages if m.get("role") != "system"]
        last = turns[-1] if turns else {"role": "user", "content": ""}
        results: tuple[Result, ...] = ()
        if last.get("role") == "user":
            results = tuple(
                Result(b["tool_use_id"], _text(b.get("content")), bool(b.get("is_error")))
                for b in _blocks(last.get("content")) if b.get("type") == "tool_result")
        system = body.get("system")
        return Seen(route=path, model=str(body.get("model", "")), stream=bool(body.get("stream")),
                    tools=tuple(t.get("name", "") for t in body.get("tools") or []),
                    system=system if isinstance(system, str) else _text(system),
                    results=results,
                    last_user=_text(last.get("content")) if last.get("role") == "user" else "",
                    text=flatten(messages), body=body)

    def other(self, path: str, body: dict[str, Any]) -> Reply | None:
        if path.endswith("/v1/messages/count_tokens"):
            return Reply({"input_tokens": approx_tokens(json.dumps(body))})
        return None

    def reply(self, seen: Seen, turn: Turn) -> Reply:
        content: list[dict[str, Any]] = []
        thinks = (seen.body.get("thinking") or {}).get("type") in ("enabled", "adaptive")
        if turn.thinking and thinks:
            content.append({"type": "thinking", "thinking": turn.thinking,
                            "signature": signature(turn.thinking)})
        if turn.text:
            content.append({"type": "text", "text": turn.text})
        content += [{"type": "tool_use", "id": c.id or new_id("toolu_"), "name": c.name,
                     "input": c.arguments} for c in turn.calls]
        message = {"id": new_id("msg_"), "type": "message", "role": "assistant",
                   "model": seen.model, "content": content,
                   "stop_reason": "tool_use" if turn.calls else "end_turn",
                   "stop_sequence": None,
                   "usage": {"input_tokens": approx_tokens(seen.text),
                             "output_tokens": approx_tokens(json.dumps(content)),
                             "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}
        if not seen.stream:
            return Reply(message)
        return Reply(events=_events(message))


def _events(message: dict[str, Any]) -> list[Event]:
    start = {**message, "content": [], "stop_reason": None,
             "usage": {**message["usage"], "output_tokens": 1}}
    events: list[Event] = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(message["content"]):
        empty: dict[str, Any] = {"thinking": {"type": "thinking", "thinking": "", "signature": ""},
                                 "text": {"type": "text", "text": ""},
                                 "tool_use": {**block, "input": {}}}[block["type"]]
        events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                               "content_block": empty}))
        for delta in _deltas(block):
            events.append(("content_block_delta", {"type": "content_block_delta",
                                                   "index": index, "delta": delta}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events += [("message_delta", {"type": "message_delta",
                                  "delta": {"stop_reason": message["stop_reason"],
                                            "stop_sequence": None},
                                  "usage": {"output_tokens": message["usage"]["output_tokens"]}}),
               ("message_stop", {"type": "message_stop"})]
    return events



def _deltas(block: dict[str, Any]) -> list[dict[str, Any]]:
    if block["type"] == "thinking":
        return ([{"type": "thinking_delta", "thinking": part}
                 for part in halves(block["thinking"])]
                + [{"type": "signature_delta", "signature": block["signature"]}])
    if block["type"] == "text":
        return [{"type": "text_delta", "text": part} for part in halves(block["text"])]
    return [{"type": "input_json_delta", "partial_json": part}
            for part in halves(json.dumps(block["input"]))]


def calls_of(message: dict[str, Any]) -> list[Call]:
    """The tool calls of an assistant message of a request (for checks)."""
    return [Call(b["name"], b.get("input") or {}, b["id"])
            for b in _blocks(message.get("content")) if b.get("type") == "tool_use"]
