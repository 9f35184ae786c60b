"""deep /synthesize is incremental: an agent's run replayed step by step, each call's
prompt carries only the older turns the last call had not summarized, with that
summary, and the service keeps nothing for it but its cache (so another replica on
the same Redis carries on where the first left off)."""

import json
import re
import uuid

import httpx
import pytest
import respx

from tests.api.test_deep import PROVIDER, URL, completion
from tests.conftest import serve
from tests.support.corpus import load_named
from tests.support.invariants import check_openai

pytestmark = pytest.mark.anyio
SHARED_REDIS = "redis://127.0.0.1:6379/0"
RUN = "minisweagent-ds-chat-test-1-100-django__django-11179"
STEPS = 24
FACTS = re.compile(r"[\w.-]*/[\w./-]+|\b\w+\.py\b")


def scripted(prompts):
    """A model that numbers its summaries and names the paths of the steps it was sent,
    keeping every prompt."""
    def reply(request):
        messages = json.loads(request.content)["messages"]
        prompts.append(messages[-1]["content"])
        steps = messages[-1]["content"].rsplit("<transcript>", 1)[-1]
        named = ", ".join(list(dict.fromkeys(FACTS.findall(steps)))[:4]) or "the code"
        text = (f"Goal: clear the PK after delete() (summary {len(prompts)}).\nDone so far: "
                f"read {named}.\nKey findings: the fast delete path.\nFailures and lessons: "
                "none.\nStill to do: patch and test.")
        return httpx.Response(200, json=completion(text))
    return reply


def steps(messages):
    """The conversation as the agent sent it before each of its model calls."""
    ends = [i for i in range(2, len(messages)) if messages[i]["role"] == "assistant"]
    return [messages[:end] for end in ends[:STEPS]]


@pytest.mark.parametrize("redis_url", [None, SHARED_REDIS], ids=["memory", "redis"])
@respx.mock
async def test_each_step_sends_only_the_turns_the_last_summary_did_not_cover(make_app,
                                                                              redis_url):
    prompts: list[str] = []
    respx.post(URL).mock(side_effect=scripted(prompts))
    run = load_named(RUN)
    # A task no other test run sends, so that the shared Redis holds nothing of it yet
    # (at its start: a prompt shows a long task's start).
    run[1] = {**run[1], "content": f"({uuid.uuid4()})\n{run[1]['content']}"}
    settings = {"llm_providers": [PROVIDER], "redis_url": redis_url}
    apps = [make_app(**settings)] + ([make_app(**settings)] if redis_url else [])
    bodies = []
    async with serve(apps[0]) as a, serve(apps[-1]) as b:
        for n, sent in enumerate(steps(run)):  # with Redis, replicas take turns
            r = await (a, b)[n % 2].post("/synthesize", json={
                "messages": sent, "reasoning": {"synthesis": "deep"}})
            assert r.status_code == 200, r.text
            body = r.json()
            check_openai(sent, body["messages"])  # a valid transcript at every step
            bodies.append(body)
        whole = len(prompts)
        await a.post("/synthesize", json={"messages": steps(run)[-1], "force_refresh": True,
                                         "reasoning": {"synthesis": "deep"}})
    full_last = len(prompts[whole])  # what the last step sends without an earlier summary
    prompts = prompts[:whole]
    deep = [body for body in bodies if body["mode"] == "deep"]
    assert len(deep) >= 20 and not any(body["degraded"] for body in bodies)
    assert len(prompts) >= 8, "the older part grew on many steps"
    assert "Earlier steps:" in prompts[0] and "State summary" not in prompts[0]
    first_turn = run[2]["content"][:60]  # the agent's first words, in the older part from then on
    assert first_turn in prompts[0]
    for n, prompt in enumerate(prompts[1:], 2):
        # Every later call updates the summary the one before it made, and sends only the
        # turns after it.
        assert "State summary of the earlier steps:" in prompt, n
        assert first_turn not in prompt, n
        assert f"(summary {n - 1})" in prompt, n
        assert len(prompt) < full_last / 2, (n, len(prompt), full_last)
    # Not growing with the run: the last calls send about what the first updates sent.
    updates = [len(p) for p in prompts[1:]]
    assert max(updates[-4:]) < 1.5 * max(updates[:4]), updates
    # The output carries the newest summary, and steps between calls reuse it.
    note = next(m["content"] for m in bodies[-1]["messages"]
                if "State of earlier work" in str(m["content"]))
    assert f"(summary {len(prompts)})" in note
    reused = [body for body in deep if body["cache"]["hit"]]
    assert reused and all(body["llm"] is not None for body in reused)
