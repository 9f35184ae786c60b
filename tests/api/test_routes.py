"""Routers are mounted flat on the app's own router (``routes.mount``)."""

import pytest
from fastapi import APIRouter, FastAPI
from fastapi.testclient import TestClient

from app.api.routes import mount, synthesize


def test_a_mounted_router_is_served_from_the_apps_own_routes():
    app = FastAPI()
    router = APIRouter()

    @router.get("/ping")
    async def ping() -> dict[str, str]:
        return {"pong": "yes"}

    mount(app, router)
    assert router.routes[0] in app.router.routes  # the same route objects, one level
    with TestClient(app) as client:
        assert client.get("/ping").json() == {"pong": "yes"}
    assert "/ping" in app.openapi()["paths"]


@pytest.mark.parametrize("route", synthesize.router.routes)
def test_the_services_routes_are_the_apps_own(route, make_app):
    assert route.path in {r.path for r in make_app().router.routes}
