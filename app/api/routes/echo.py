"""``POST /bench/echo``: the request body back, as the ceiling ``bench --load`` measures
the jobs against. Only mounted when CONTEXTSYNTH_BENCH_ECHO is set (the bench sets it
on the service it starts); it is no part of the API."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from app.api.routes import operation_id

router = APIRouter(generate_unique_id_function=operation_id)


@router.post("/bench/echo", include_in_schema=False)
async def echo(request: Request) -> Response:
    return Response(await request.body(), media_type="application/json")
