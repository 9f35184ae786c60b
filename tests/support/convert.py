"""OpenAI chat messages -> an Anthropic Messages payload (the tests' own converter)."""

from __future__ import annotations

import json
from typing import Any


def _tool_input(arguments: str) -> Any:
    try:
        value = json.loads(arguments) if arguments else {}
    except ValueError:
        return {"raw": arguments}
    return value if isinstance(value, dict) else {"value": value}


def to_anthropic(messages: list[dict[str, Any]]) -> dict[str, Any]:
    system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
    out: list[dict[str, Any]] = []

    def push(role: str, blocks: list[dict[str, Any]]) -> None:
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for m in messages:
        role, content = m["role"], m.get("content")
        if role == "system":
            continue
        if role == "tool":
            push("user", [{"type": "tool_result", "tool_use_id": m["tool_call_id"],
                           "content": content or ""}])
            continue
        blocks: list[dict[str, Any]] = []
        if content:
            blocks.append({"type": "text", "text": content})
        for call in m.get("tool_calls") or []:
            blocks.append({"type": "tool_use", "id": call["id"],
                           "name": call["function"]["name"],
                           "input": _tool_input(call["function"]["arguments"])})
        if blocks:
            push(role, blocks)
    body: dict[str, Any] = {"messages": out}
    if system:
        body["system"] = system
    return body
