"""Large requests: a body budget and a number at once, from the worker's memory."""

import pytest

from app.engine.errors import Overloaded
from app.service.cache_plan import cache_plan
from app.service.work import LargeRequests, body_budget, large_requests
from tests.conftest import serve
from tests.support.build import coding_run

pytestmark = pytest.mark.anyio
MIB = 1 << 20


def test_budgets_follow_the_memory_limit_beside_the_caches():
    assert body_budget(None, 16 * MIB, 0) == 16 * MIB
    assert large_requests(None, 16 * MIB, 0) == 4
    caches = cache_plan(1024 * MIB).total  # 3/8 of the pod's 1 GiB
    assert body_budget(1024 * MIB, 16 * MIB, caches) == 16 * MIB  # the pod holds one
    assert large_requests(1024 * MIB, 16 * MIB, caches) == 2  # and two at once
    assert large_requests(1024 * MIB, 16 * MIB, 0) == 3  # without caches, three
    assert body_budget(512 * MIB, 64 * MIB, 0) == 24 * MIB  # one 64 MB body would not fit
    assert body_budget(512 * MIB, 64 * MIB, 128 * MIB) == 16 * MIB  # less beside caches
    assert large_requests(300 * MIB, 16 * MIB, 100 * MIB) == 1  # never none


async def test_a_large_request_past_the_slots_waits_then_gets_a_503():
    gate = LargeRequests(1, 0.05)
    async with gate.admitted():
        with pytest.raises(Overloaded) as refused:
            async with gate.admitted():
                pass
        assert refused.value.retry_after >= 1
    async with gate.admitted():  # the slot came back
        pass


async def test_only_large_requests_wait_for_a_slot(make_app):
    app = make_app(offload_chars=20_000, large_requests=1, large_request_wait_s=0.05)
    async with serve(app) as c:
        async with app.state.services.runner.large.admitted():  # the one slot is taken
            small = await c.post("/synthesize", json={"messages": coding_run(4)})
            large = await c.post("/synthesize", json={"messages": coding_run(30)})
        assert small.status_code == 200
        assert large.status_code == 503 and large.json()["type"].endswith("overloaded")
        assert int(large.headers["retry-after"]) >= 1
        assert (await c.post("/synthesize", json={"messages": coding_run(30)})).status_code \
            == 200


async def test_a_body_that_would_not_fit_in_memory_is_a_413_that_says_why(make_app):
    # 128 MiB for the interpreter and 128 for the caches: room for a 64 KiB body.
    app = make_app(memory_limit_bytes=256 * MIB + 16 * 64 * 1024, cache_memory_bytes=128 * MIB)
    async with serve(app) as c:
        r = await c.post("/synthesize", json={"messages": coding_run(40, 4000)})
    assert r.status_code == 413 and "worker's memory" in r.json()["detail"]
    assert r.json()["limit"] == 64 * 1024
