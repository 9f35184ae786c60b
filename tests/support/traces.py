"""Action traces made from the corpus's tool calls (the tests' own converter)."""

from __future__ import annotations

import json
from typing import Any


def to_actions(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One action per call, with its result: the nearest earlier unanswered call of that id
    (ids repeat in the corpus, so a dict by id would pair a result with a later call)."""
    actions: list[dict[str, Any]] = []
    waiting: dict[str, list[dict[str, Any]]] = {}
    thought = None
    for m in messages:
        if m["role"] == "tool":
            queue = waiting.get(m["tool_call_id"])
            if queue:
                queue.pop()["observation"] = m.get("content") or ""
            continue
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
            action = {"action": call["function"]["name"], "action_input": shown,
                      "observation": "", "thought": thought}
            actions.append(action)
            waiting.setdefault(call["id"], []).append(action)
            thought = None
    return actions
