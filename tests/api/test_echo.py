"""The bench's echo route exists only when asked for, and is no part of the API."""

from __future__ import annotations

import pytest

from tests.conftest import serve

pytestmark = pytest.mark.anyio


async def test_the_echo_route_is_off_by_default(client):
    r = await client.post("/bench/echo", json={"messages": []})
    assert r.status_code == 404


async def test_the_echo_route_sends_the_body_back_when_set(make_app):
    app = make_app(bench_echo=True)
    async with serve(app) as c:
        r = await c.post("/bench/echo", content=b'{"messages": [1, 2]}',
                         headers={"content-type": "application/json"})
    assert r.status_code == 200 and r.content == b'{"messages": [1, 2]}'
    assert "/bench/echo" not in app.openapi()["paths"]
