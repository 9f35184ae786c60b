"""Action traces made from the shared transcripts' tool calls (the tests' own converter)."""

from __future__ import annotations

import json
from typing import Any


def to_actions(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    results: dict[str, str] = {}
    actions: list[dict[str, Any]] = []
    thought = None
    for m in messages:
        if m["role"] == "tool":
            results[m["tool_call_id"]] = m.get("content") or ""
    for m in messages:
        if m["role"] != "assistant":
            continue
        thought = m.get("content")
        for call in m.get("tool_calls") or []:
            args = call["function"]["arguments"]
            try:
                value = json.loads(args)
                shown = value.get("command", args) if isinstance(value, dict) else args
            except ValueError:
                shown = args
            actions.append({"action": call["function"]["name"], "action_input": shown,
                            "observation": results.get(call["id"], ""), "thought": thought})
            thought = None
    return actions
