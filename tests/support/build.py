"""Small OpenAI transcripts written in a line each, for focused tests."""

from __future__ import annotations

import json
from typing import Any


def tool_turn(call_id: str, name: str, args: dict[str, Any], output: str,
              text: str | None = None) -> list[dict[str, Any]]:
    return [
        {"role": "assistant", "content": text, "tool_calls": [
            {"id": call_id, "type": "function",
             "function": {"name": name, "arguments": json.dumps(args)}}]},
        {"role": "tool", "tool_call_id": call_id, "content": output},
    ]


def coding_run(turns: int, output_chars: int = 1500) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You fix bugs with bash."},
        {"role": "user", "content": "Fix the crash in src/parser.py; keep the public API."},
    ]
    for i in range(turns):
        # Code-like lines, about as many tokens per character as a real file's.
        rows = (f"    value_{i}_{j} = compute({j}, {j * 7919 % 997}, 'k{j}')\n"
                for j in range(output_chars))
        body = f"line {i}: " + "".join(rows)[:output_chars]
        messages += tool_turn(f"call_{i}", "bash", {"command": f"cat src/module_{i}.py"},
                              f"# module {i}\n{body}")
    return messages
