"""What deep /synthesize sends the model over a run, step by step (a measurement, not a test).

A corpus run is replayed through the HTTP API as its agent sent it, one request before
each of its model calls, against a scripted model at the HTTP boundary that names the
paths of what it was sent. It prints the characters of each prompt the service sent,
incremental (an earlier call's summary updated with the turns after it) and whole (the
whole older part every time, as with ``force_refresh``; a prompt the one before sent
word for word is left out, as the LLM cache would answer it). Run from the repository
root:  .venv/bin/python scripts/deep_prompts.py [--run NAME] [--steps 24] [--first 0]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from pathlib import Path
from typing import Any

import httpx
import respx
from prometheus_client import CollectorRegistry

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.main import create_app
from app.settings import Settings
from tests.support.corpus import load_named

URL = "https://llm.test/v1/chat/completions"
_PATHS = re.compile(r"[\w.-]*/[\w./-]+|\b\w+\.py\b")


def _reply(prompts: list[str]) -> Any:
    def reply(request: httpx.Request) -> httpx.Response:
        user = json.loads(request.content)["messages"][-1]["content"]
        prompts.append(user)
        named = ", ".join(list(dict.fromkeys(_PATHS.findall(user)))[-4:]) or "the code"
        text = (f"Goal: the task.\nDone so far: read {named}.\nKey findings: as read.\n"
                "Failures and lessons: none.\nStill to do: finish.")
        return httpx.Response(200, json={
            "id": "x", "object": "chat.completion", "model": "scripted",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})
    return reply


async def replay(run: str, steps: int, first: int, whole: bool) -> list[int]:
    messages = load_named(run)
    ends = [i for i in range(max(first, 2), len(messages))
            if messages[i]["role"] == "assistant"][:steps]
    prompts: list[str] = []
    settings = Settings(llm_providers=[{"name": "main", "kind": "openai", "api_key": "k",
                                        "base_url": "https://llm.test/v1", "model": "m"}])
    app = create_app(settings, registry=CollectorRegistry(), discover=lambda: [], environ={})
    with respx.mock:
        respx.post(URL).mock(side_effect=_reply(prompts))
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://b") as c:
                for end in ends:
                    r = await c.post("/synthesize", json={
                        "messages": messages[:end], "force_refresh": whole,
                        "reasoning": {"synthesis": "deep"}})
                    assert r.status_code == 200, r.text
    sent = [p for n, p in enumerate(prompts) if n == 0 or p != prompts[n - 1]]
    return [len(p) for p in sent]  # the user message: the system prompt is the same


async def main(run: str, steps: int, first: int) -> None:
    for name, whole in (("whole", True), ("incremental", False)):
        sizes = await replay(run, steps, first, whole)
        print(json.dumps({"prompts": name, "run": run, "steps": steps, "calls": len(sizes),
                          "chars": sizes, "total_chars": sum(sizes)}))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--run", default="minisweagent-ds-chat-test-1-100-django__django-11179")
    parser.add_argument("--steps", type=int, default=24)
    parser.add_argument("--first", type=int, default=0,
                        help="the first step: a message index of the run")
    args = parser.parse_args()
    asyncio.run(main(args.run, args.steps, args.first))
