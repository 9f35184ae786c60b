"""Every hostile body kind against every job, over real HTTP on one keep-alive
connection: the answer is a problem document or a result, never a 5xx, and the
connection still serves the next request."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx
import pytest
from fastapi import FastAPI

from tests.support.hostile import ODD, REFUSED
from tests.support.threaded import served

JOBS = ("/synthesize", "/compress-history", "/summarize-trace", "/rescue",
        "/summarize-recall", "/reflect")
JSON = {"content-type": "application/json"}


def _port(response: httpx.Response) -> int:
    """The client's own port: the same port, the same connection."""
    stream = response.extensions["network_stream"]
    return int(stream.get_extra_info("client_addr")[1])


@pytest.fixture(scope="module")
def base_url(make_module_app: Callable[[], FastAPI]) -> Iterator[str]:
    with served(make_module_app()) as url:
        yield url


@pytest.fixture(scope="module")
def make_module_app() -> Callable[[], FastAPI]:
    from prometheus_client import CollectorRegistry

    from app.main import create_app
    from app.settings import Settings

    def make() -> FastAPI:
        app = create_app(Settings(), registry=CollectorRegistry(), discover=lambda: [],
                         environ={})

        async def boom() -> None:
            raise RuntimeError("a bug in a route")

        app.add_api_route("/boom", boom, methods=["POST"])
        return app
    return make


@pytest.mark.parametrize("path", JOBS)
def test_refused_bodies_get_the_problem_that_names_them(base_url: str, path: str) -> None:
    with httpx.Client(base_url=base_url, timeout=30) as client:
        first = client.get("/healthz")
        for kind, (body, status, slug) in REFUSED.items():
            r = client.post(path, content=body, headers=JSON)
            assert (r.status_code, r.json()["type"].rsplit(":", 1)[-1]) == (status, slug), kind
            assert r.headers["content-type"] == "application/problem+json", kind
            if slug == "nested-too-deep":
                assert "64 levels" in r.json()["detail"], kind
            after = client.get("/healthz")
            assert after.status_code == 200 and _port(after) == _port(first), kind


@pytest.mark.parametrize("path", JOBS)
def test_odd_bodies_are_answered_and_never_with_a_5xx(base_url: str, path: str) -> None:
    with httpx.Client(base_url=base_url, timeout=30) as client:
        first = client.get("/healthz")
        for kind, body in ODD.items():
            r = client.post(path, content=body, headers=JSON)
            assert r.status_code < 500, (kind, r.text[:300])
            if r.status_code >= 400:
                assert r.json()["detail"], kind
            after = client.get("/healthz")
            assert after.status_code == 200 and _port(after) == _port(first), kind


def test_a_bugs_500_leaves_the_connection_open(base_url: str) -> None:
    with httpx.Client(base_url=base_url, timeout=30) as client:
        r = client.post("/boom", json={}, headers={"x-request-id": "boom-1"})
        assert r.status_code == 500
        problem = r.json()
        assert problem["type"].endswith("internal-error") and problem["reference"]
        assert r.headers["x-request-id"] == "boom-1"
        after = client.get("/healthz")
        assert after.status_code == 200 and _port(after) == _port(r)
