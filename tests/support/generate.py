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


_EDIT = "{path}\n```python\n<<<<<<< SEARCH\n{old}\n=======\n{new}\n>>>>>>> REPLACE\n```"


@st.composite
def chat_session(draw: st.DrawFn, max_steps: int = 60) -> list[dict[str, Any]]:
    """A session of an agent that acts in its text, as Aider's chats go: edit blocks and
    shell blocks in replies, the harness's reports, console commands the user types and
    what they print, and the user's own requests, in any order."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "Act as an expert developer. Use edit blocks."},
        {"role": "user", "content": draw(text(4)) or "Fix the parser."}]
    for n in range(draw(st.integers(0, max_steps))):
        kind = draw(st.sampled_from(["edit", "shell", "prose", "console", "request"]))
        if kind == "edit":
            block = _EDIT.format(path=f"src/m{n}.py", old=draw(text(20)) or "x = 1",
                                 new=draw(text(60)) or "x = 2")
            messages.append({"role": "assistant", "content": f"{draw(text(2))}\n\n{block}"})
            if draw(st.booleans()):
                report = draw(st.sampled_from([
                    f"Applied edit to src/m{n}.py\nCommit {n:07x} aider: edit",
                    "The LLM did not conform to the edit format.\n# 1 SEARCH/REPLACE block "
                    "failed to match!"]))
                tail = draw(st.sampled_from(["", "\n" + (draw(text(3)) or "more")]))
                messages.append({"role": "user", "content": report + tail})
        elif kind == "shell":
            messages.append({"role": "assistant",
                             "content": f"Run this:\n\n```bash\npytest -q tests/t{n}.py\n```"})
            if draw(st.booleans()):
                messages.append({"role": "user", "content": "Run shell commands? (Y)es/(N)o "
                                 f"[Yes]: y\nRunning pytest -q tests/t{n}.py\n{draw(text(20))}"})
        elif kind == "prose":
            messages.append({"role": "assistant", "content": draw(text(40)) or "Done."})
        elif kind == "console":
            messages.append({"role": "user", "content": draw(st.sampled_from(
                ["/run pytest -q", "/ls", f"/add src/m{n}.py", "/undo", "/git status"]))})
            if draw(st.booleans()):
                messages.append({"role": "user", "content": draw(st.sampled_from(
                    [f"Added src/m{n}.py to the chat", draw(text(80)) or "ok\nok"]))})
        else:
            messages.append({"role": "user", "content": draw(text(3)) or "Go on, please."})
    return messages
