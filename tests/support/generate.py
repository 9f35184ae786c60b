"""Hypothesis strategies for OpenAI transcripts with realistic structure and sizes."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

_WORDS = st.sampled_from([
    "ok", "src/app/main.py", "Traceback (most recent call last):", "ValueError: bad input",
    "reservation ZFA04Y", "$1,234.50", "def parse(self):", "<returncode>1</returncode>",
    "user_id mia_li_3668", "https://example.org/docs", "PASSED", "12 tests", "é ü 中文",
    "", "{\"k\": [1, 2]}",
])


@st.composite
def text(draw: st.DrawFn, max_lines: int = 60) -> str:
    line = " ".join(draw(st.lists(_WORDS, max_size=8)))
    return "\n".join([line] * draw(st.integers(0, max_lines)))


@st.composite
def arguments(draw: st.DrawFn) -> str:
    keys = draw(st.lists(st.sampled_from(["command", "path", "content", "id", "n"]),
                         max_size=3, unique=True))
    value: dict[str, Any] = {}
    for k in keys:
        value[k] = draw(st.integers(0, 99)) if k == "n" else draw(text(max_lines=20))
    return json.dumps(value)


@st.composite
def openai_transcript(draw: st.DrawFn, max_turns: int = 12) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if draw(st.booleans()):
        messages.append({"role": "system", "content": draw(text(5)) or "system",
                         "x_extra": {"kept": True}})
    messages.append({"role": "user", "content": draw(text(10)) or "task", "name": "u"})
    serial = 0
    for _ in range(draw(st.integers(0, max_turns))):
        calls = []
        for _ in range(draw(st.integers(0, 3))):
            serial += 1
            calls.append({"id": f"call_{serial}", "type": "function",
                          "function": {"name": draw(st.sampled_from(
                              ["bash", "read_file", "write_file", "search", "send_email"])),
                              "arguments": draw(arguments())}})
        assistant: dict[str, Any] = {"role": "assistant", "content": draw(text(4)) or None}
        if calls:
            assistant["tool_calls"] = calls
        elif assistant["content"] is None:
            assistant["content"] = "thinking"
        messages.append(assistant)
        for call in calls:
            messages.append({"role": "tool", "tool_call_id": call["id"],
                             "content": draw(text(120)), "x_seen": 1})
        if draw(st.integers(0, 3)) == 0:
            messages.append({"role": "user", "content": draw(text(3)) or "go on",
                             "x_meta": "kept"})
    return messages
