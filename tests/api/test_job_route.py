"""The job routes' lean request path answers as FastAPI's own handler did."""

import pytest

from app.api.auth import hash_key
from app.api.job_route import JobRoute
from app.api.routes import history, recall, reflect, rescue, synthesize, trace
from tests.conftest import serve
from tests.support.build import coding_run

pytestmark = pytest.mark.anyio
JOB_ROUTERS = (synthesize, history, trace, recall, reflect, rescue)


def test_every_job_route_takes_the_lean_path():
    for module in JOB_ROUTERS:
        for route in module.router.routes:
            assert isinstance(route, JobRoute) and route._shape() is not None, route


async def test_validation_errors_point_into_the_body(client):
    r = await client.post("/synthesize", json={"messages": coding_run(2), "tier": "huge"})
    assert r.status_code == 422
    problem = r.json()
    assert problem["type"].endswith("validation-error")
    assert [e["pointer"] for e in problem["errors"]] == ["/tier"]
    r = await client.post("/compress-history", json={"messages": coding_run(2), "keep": 1})
    assert r.status_code == 422
    assert r.json()["errors"][0] == {"pointer": "/keep", "detail":
                                     "this field is not part of the API; check its spelling"}


async def test_a_body_that_is_not_an_object_is_a_validation_error(client):
    r = await client.post("/synthesize", json=[1, 2])
    assert r.status_code == 422 and r.json()["errors"][0]["pointer"] == "/"


@pytest.mark.parametrize(("path", "body", "pointer"), [
    ("/synthesize", {"messages": [{"role": "user", "content": "hi"}, 7]}, "/messages/1"),
    ("/compress-history", {"messages": ["not a message"]}, "/messages/0"),
    ("/synthesize", {"contents": [None]}, "/contents/0"),
])
async def test_an_item_that_is_not_an_object_is_named_by_the_parser(client, path, body,
                                                                      pointer):
    # The model takes the conversation's items as they come (the format's parser checks
    # them once): a bad one still gets a 422 that points at it and says what it must be.
    r = await client.post(path, json=body)
    assert r.status_code == 422 and r.headers["content-type"] == "application/problem+json"
    assert r.json()["pointer"] == pointer and "must be an object" in r.json()["detail"]


async def test_malformed_json_says_where(client):
    r = await client.post("/summarize-trace", content=b'{"trace": [1,',
                          headers={"content-type": "application/json"})
    assert r.status_code == 400
    assert r.json()["type"].endswith("malformed-json") and "character 13" in r.json()["detail"]


async def test_a_wrong_key_is_refused_before_the_body_is_read_for_fields(make_app):
    async with serve(make_app(api_keys={hash_key("right"): "acme"})) as c:
        r = await c.post("/synthesize", json={"bogus": 1},
                         headers={"authorization": "Bearer wrong"})
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
        ok = await c.post("/synthesize", json={"messages": coding_run(2)},
                          headers={"authorization": "Bearer right"})
        assert ok.status_code == 200


def test_an_endpoint_of_another_shape_is_refused_when_the_route_is_made():
    from fastapi import APIRouter

    router = APIRouter(route_class=JobRoute)

    async def no_body(q: int) -> dict[str, int]:
        return {"q": q}

    with pytest.raises(TypeError, match="/odd: a JobRoute takes one JSON body model"):
        router.add_api_route("/odd", no_body, methods=["POST"])
