"""``prefix`` in /synthesize answers, and the Anthropic cache breakpoints placed on it."""

import pytest

from tests.support.build import coding_run, tool_turn
from tests.support.convert import to_anthropic
from tests.support.invariants import check_anthropic

pytestmark = pytest.mark.anyio


def marks(body):
    blocks = [b for m in body["messages"] if isinstance(m["content"], list)
              for b in m["content"]]
    blocks += [b for b in body.get("system") or [] if isinstance(b, dict)]
    return [b for b in blocks if "cache_control" in b]


async def test_the_next_call_sends_the_declared_prefix_again(client):
    messages = coding_run(40)
    first = (await client.post("/synthesize", json={"messages": messages})).json()
    more = messages + tool_turn("n1", "bash", {"command": "ls"}, "a.py\nb.py")
    second = (await client.post("/synthesize", json={"messages": more})).json()
    prefix = first["prefix"]
    assert 2 <= prefix["stable_messages"] <= prefix["steady_messages"] < len(first["messages"])
    assert 0 < prefix["stable_tokens"] <= prefix["steady_tokens"] < first["stats"]["tokens_after"]
    steady = prefix["steady_messages"]
    assert second["messages"][:steady] == first["messages"][:steady]
    assert prefix["cache_breakpoints"] == []


async def test_anthropic_breakpoints_mark_the_prefixes(client):
    payload = to_anthropic(coding_run(30))  # two closed blocks, neither aged yet
    r = await client.post("/synthesize", json={**payload, "cache_breakpoints": True})
    assert r.status_code == 200, r.text
    body = r.json()
    check_anthropic(payload, body)
    placed = body["prefix"]["cache_breakpoints"]
    assert len(placed) == 3 and len(marks(body)) == 3
    for p in placed:
        block = body["messages"][p["message"]]["content"][p["block"]]
        assert block["cache_control"] == {"type": "ephemeral"}
    # the stable prefix ends inside the first message (the task, with the notes merged
    # after it), before the first note, which changes when it ages; the notes end after
    # the last note, which the next closing keeps; the steady prefix before the newest turn
    stable, notes, steady = placed
    first = body["messages"][0]["content"]
    assert stable == {"message": 0, "block": 0}
    assert first[1]["text"].startswith("[contextsynth] Earlier work")
    assert notes == {"message": 0, "block": len(first) - 1}
    assert first[-1]["text"].startswith("[contextsynth] More earlier work")
    assert steady["message"] == body["prefix"]["steady_messages"] - 1
    # without the option the same answer carries no marks
    plain = (await client.post("/synthesize", json=payload)).json()
    assert marks(plain) == []
    for p in placed:
        del body["messages"][p["message"]]["content"][p["block"]]["cache_control"]
    assert plain["messages"] == body["messages"]


def mark_last_block(message):
    blocks = message["content"]
    if isinstance(blocks, str):
        blocks = [{"type": "text", "text": blocks}]
    return {**message, "content": [*blocks[:-1], {**blocks[-1],
                                                  "cache_control": {"type": "ephemeral"}}]}


async def test_the_callers_breakpoints_are_kept_and_count_against_the_limit(client):
    payload = to_anthropic(coding_run(40))
    payload["system"] = [{"type": "text", "text": "You fix bugs.",
                          "cache_control": {"type": "ephemeral"}}]
    payload["messages"][-5] = mark_last_block(payload["messages"][-5])

    async def placed(payload):
        body = (await client.post("/synthesize",
                                  json={**payload, "cache_breakpoints": True})).json()
        assert len(marks(body)) <= 4
        return body

    body = await placed(payload)  # two of the caller's: both of ours fit
    assert body["system"] == payload["system"]
    assert marks({"messages": body["messages"][-5:-4]})  # the caller's mark, kept
    assert len(body["prefix"]["cache_breakpoints"]) == 2 and len(marks(body)) == 4
    # room for two of our three: the longer prefixes (steady, the notes), not the head
    assert {"message": 0, "block": 0} not in body["prefix"]["cache_breakpoints"]
    payload["messages"][-1] = mark_last_block(payload["messages"][-1])
    body = await placed(payload)  # three: one of ours, on the longer prefix
    [ours] = body["prefix"]["cache_breakpoints"]
    assert ours["message"] == body["prefix"]["steady_messages"] - 1
    payload["messages"][-2] = mark_last_block(payload["messages"][-2])
    body = await placed(payload)  # four already: none added
    assert body["prefix"]["cache_breakpoints"] == []


async def test_breakpoints_outside_anthropic_are_a_clear_422(client):
    r = await client.post("/synthesize", json={"messages": coding_run(4),
                                               "cache_breakpoints": True})
    assert r.status_code == 422
    problem = r.json()
    assert problem["pointer"] == "/cache_breakpoints" and "Anthropic" in problem["detail"]
