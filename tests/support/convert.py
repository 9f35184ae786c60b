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


def to_gemini(messages: list[dict[str, Any]], *, with_ids: bool = False) -> dict[str, Any]:
    """Gemini ``contents``; without ids, responses are matched to calls by order and name."""
    system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
    names: dict[str, str] = {}  # ids of the latest assistant message (runs reuse ids)
    out: list[dict[str, Any]] = []

    def push(role: str, parts: list[dict[str, Any]]) -> None:
        if out and out[-1]["role"] == role:
            out[-1]["parts"].extend(parts)
        else:
            out.append({"role": role, "parts": parts})

    for m in messages:
        role, content = m["role"], m.get("content")
        if role == "system":
            continue
        if role == "tool":
            response: dict[str, Any] = {"name": names[m["tool_call_id"]],
                                        "response": {"output": content or ""}}
            if with_ids:
                response["id"] = m["tool_call_id"]
            push("user", [{"functionResponse": response}])
            continue
        parts: list[dict[str, Any]] = [{"text": content}] if content else []
        if role == "assistant":
            names = {c["id"]: c["function"]["name"] for c in m.get("tool_calls") or []}
        for call in m.get("tool_calls") or []:
            fc: dict[str, Any] = {"name": call["function"]["name"],
                                  "args": _tool_input(call["function"]["arguments"])}
            if with_ids:
                fc["id"] = call["id"]
            parts.append({"functionCall": fc})
        if parts:
            push("model" if role == "assistant" else "user", parts)
    body: dict[str, Any] = {"contents": out}
    if system:
        body["systemInstruction"] = {"parts": [{"text": system}]}
    return body


def to_responses(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """OpenAI Responses ``input`` items, with a reasoning item before each call batch."""
    system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
    items: list[dict[str, Any]] = []
    for n, m in enumerate(messages):
        role, content = m["role"], m.get("content")
        if role == "system":
            continue
        if role == "tool":
            items.append({"type": "function_call_output", "call_id": m["tool_call_id"],
                          "output": content or ""})
            continue
        if role == "assistant":
            calls = m.get("tool_calls") or []
            if calls:
                items.append({"type": "reasoning", "id": f"rs_{n}", "summary": [
                    {"type": "summary_text", "text": f"Plan for step {n}"}]})
            if content:
                items.append({"type": "message", "role": "assistant", "id": f"msg_{n}",
                              "content": [{"type": "output_text", "text": content,
                                           "annotations": []}]})
            items.extend({"type": "function_call", "call_id": c["id"], "id": f"fc_{c['id']}",
                          "name": c["function"]["name"],
                          "arguments": c["function"]["arguments"]} for c in calls)
            continue
        items.append({"type": "message", "role": "user",
                      "content": [{"type": "input_text", "text": content or ""}]})
    body: dict[str, Any] = {"input": items}
    if system:
        body["instructions"] = system
    return body
