"""A small OpenAI-compatible Chat Completions server for end-to-end tests, over loopback.

It answers each job's prompt with a plausible reply built from the prompt
itself, and records every request so tests can see what the service sent.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.support.threaded import ThreadedServer

SECTIONS = ("Original request", "Project / world state", "Completed work",
            "Decisions and constraints", "Errors", "Current state")


# What a summary names of the transcript: its files and paths, else its long numbers.
_FACTS = re.compile(r"[\w.-]*/[\w./-]+|\b\w+\.py\b|\b\d{3,}\b")


def _named(user: str) -> str:
    found = list(dict.fromkeys(_FACTS.findall(user.split("<transcript>", 1)[-1])))[:3]
    return ", ".join(found) or "the code"


def reply_for(messages: list[dict[str, Any]]) -> str:
    system, user = messages[0]["content"], messages[-1]["content"]
    if "working memory" in system:
        return (f"Goal: fix the bug.\nDone so far: explored {_named(user)}.\nKey findings: "
                "the failing path is known.\nFailures and lessons: none.\nStill to do: patch.")
    if "compress the history" in system:
        return "\n".join(f"## {s}\n- noted by the fake model: {_named(user)}"
                         for s in SECTIONS)
    if "earlier actions of a ReAct agent" in system:
        heads = list(re.finditer(r"^\S+ \(\d+ calls?\)$", user, re.MULTILINE))
        ends = [h.start() for h in heads[1:]] + [len(user)]
        return "\n".join(_trace_line(user[h.start():end]) for h, end in
                         zip(heads, ends, strict=True))
    if "ran out of steps" in system:
        return "From the evidence: the patch was written and the final test passed."
    return "ok"


_PATH = re.compile(r"[\w.@~-]*[/.][\w./@~-]+")
# Error lines, and a raised exception whatever its name (``django.core.exceptions.
# ImproperlyConfigured: ...``): a line that starts with a dotted name and a colon.
_ERROR = re.compile(r"^(?:.*(?:Traceback|Error|error:|No module|FAILED|Exception).*"
                    r"|[A-Za-z_]\w*(?:\.\w+)+: .*)$", re.MULTILINE)


# The ids, numbers and codes of an input (JG7FMM, 2024-05-25, MSP).
_ID = re.compile(r"\b[\w-]*\d[\w-]*\b|\b[A-Z]{3,}\b")


def _trace_line(block: str) -> str:
    """What a diligent model writes for one tool group: its heading, then every path and
    id of the inputs and every error line of the observations, verbatim."""
    heading = block.split("\n", 1)[0]
    inputs = re.findall(r"^Action Input: (.*)$", block, re.MULTILINE)
    paths = dict.fromkeys(p for line in inputs for p in _PATH.findall(line))
    errors = dict.fromkeys(e.strip() for e in _ERROR.findall(block))
    ids = dict.fromkeys(i for line in inputs for i in _ID.findall(line))
    return (f"{heading}: looked things up in {', '.join(paths)}; ids: {', '.join(ids)}; "
            f"errors: {'; '.join(errors)}")


class FakeLLM:
    def __init__(self, delay_s: float = 0.0) -> None:
        self.requests: list[dict[str, Any]] = []
        self.delay_s = delay_s  # lets concurrent requests overlap
        app = Starlette(routes=[Route("/v1/chat/completions", self._complete,
                                      methods=["POST"])])
        self._served = ThreadedServer(app, name="the fake LLM server")
        self.port = self._served.port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def _complete(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.requests.append(body)
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        text = reply_for(body["messages"])
        prompt_chars = sum(len(m.get("content") or "") for m in body["messages"])
        return JSONResponse({
            "id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion",
            "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt_chars // 4, "completion_tokens": len(text) // 4,
                      "total_tokens": (prompt_chars + len(text)) // 4},
        })

    def __enter__(self) -> FakeLLM:
        self._served.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._served.stop()
