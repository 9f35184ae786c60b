"""The conversation key: an agent's every step carries the same one, so a router that
hashes on it sends the steps to the replica that remembers the conversation."""

import pytest

from tests.support.build import coding_run
from tests.support.convert import to_anthropic

pytestmark = pytest.mark.anyio
HEADER = "x-contextsynth-conversation"


async def test_every_step_of_an_agent_gets_the_same_key_and_another_agent_another(client):
    run = coding_run(12)
    other = [run[0], {"role": "user", "content": "Make the parser accept ISO weeks."},
             *run[2:]]
    keys = set()
    for step in range(4, 13, 2):
        r = await client.post("/synthesize", json={"messages": run[: 2 * step + 2]})
        assert r.status_code == 200
        keys.add(r.headers[HEADER])
    assert len(keys) == 1 and keys.pop().startswith("cv_")
    first = (await client.post("/synthesize", json={"messages": run})).headers[HEADER]
    second = (await client.post("/synthesize", json={"messages": other})).headers[HEADER]
    assert first != second
    # The same conversation in another wire format is another body: keyed on its own.
    anthropic = await client.post("/synthesize", json=to_anthropic(run))
    assert anthropic.headers[HEADER].startswith("cv_")


async def test_a_key_the_caller_sends_comes_back_as_sent(client):
    for path, body in (("/synthesize", {"messages": coding_run(6)}),
                       ("/compress-history", {"messages": coding_run(6)})):
        r = await client.post(path, json=body, headers={HEADER: "agent-42/run-7"})
        assert r.status_code == 200 and r.headers[HEADER] == "agent-42/run-7"


async def test_a_job_without_a_conversation_gets_no_key(client):
    r = await client.post("/reflect", json={"goal": "fix", "mode": "fast",
                                            "tool_calls": [{"tool": "ls", "output": "a"}]})
    assert r.status_code == 200 and HEADER not in r.headers
