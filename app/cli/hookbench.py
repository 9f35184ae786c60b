"""``contextsynth bench --webhooks``: does delivery keep up with a loaded replica?

The service runs as ``contextsynth serve`` (one worker) with one webhook endpoint on
loopback that takes ``latency_s`` to answer each event, as a real receiver doing a
little work does. Clients send the corpus's agent-loop requests to /synthesize, which
emits one event per answer, as fast as they can for ``seconds``: the events made per
second is the floor the delivery rate is measured against, in the same run. Printed:
events made and delivered per second while the load ran, the delivered share, and how
long the rest took to arrive after it. Target: delivery at least the production rate
(a share near 1.0 while the load runs, so that no backlog grows).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from app.cli.load import bodies
from app.cli.replay import served
from app.settings import Settings

SECRET = "whsec_Y29udGV4dHN5bnRoLWJlbmNoLXNlY3JldC0zMi1ieXRlcw=="


class _Receiver:
    def __init__(self, latency_s: float) -> None:
        self.latency_s = latency_s
        self.times: list[float] = []

    async def hook(self, request: Request) -> Response:
        await request.body()
        await asyncio.sleep(self.latency_s)
        self.times.append(time.monotonic())
        return Response(status_code=204)


def _port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def receiving(latency_s: float) -> Iterator[tuple[_Receiver, str]]:
    """A webhook endpoint in a thread of this process; its URL."""
    receiver = _Receiver(latency_s)
    port = _port()
    app = Starlette(routes=[Route("/hook", receiver.hook, methods=["POST"])])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                           log_level="warning", backlog=4096))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    try:
        yield receiver, f"http://127.0.0.1:{port}/hook"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def _produce(url: str, bodies: list[bytes], until: float, made: list[float]) -> None:
    headers = {"content-type": "application/json"}
    with httpx.Client(base_url=url, timeout=30) as client:
        for body in itertools.cycle(bodies):
            if time.monotonic() >= until:
                return
            if client.post("/synthesize", content=body, headers=headers).status_code == 200:
                made.append(time.monotonic())


def run(directory: Path, *, seconds: float = 10.0, clients: int = 8,
        latency_s: float = 0.02) -> int:
    sent = bodies(directory, 4)
    with receiving(latency_s) as (receiver, hook):
        env = {"CONTEXTSYNTH_WEBHOOKS": json.dumps([{"url": hook, "secret": SECRET}]),
               "CONTEXTSYNTH_WEBHOOKS_ALLOW_PRIVATE": "true"}
        with served(env=env) as url:
            made: list[float] = []
            start = time.monotonic()
            until = start + seconds
            threads = [threading.Thread(target=_produce,
                                        args=(url, sent[n::clients] or sent, until, made))
                       for n in range(clients)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            ended = time.monotonic()
            during = sum(t <= ended for t in receiver.times)
            deadline = ended + 60
            while len(receiver.times) < len(made) and time.monotonic() < deadline:
                time.sleep(0.05)
            drained = (max(receiver.times) if receiver.times else ended) - ended
    elapsed = ended - start
    produced = len(made) / elapsed
    delivered = during / elapsed
    width = Settings().webhook_concurrency
    print(f"{clients} clients for {elapsed:.1f} s; the endpoint takes {latency_s * 1000:.0f} ms "
          f"per event; {width} deliveries at once per endpoint")
    print(f"events made:      {produced:8.1f}/s  ({len(made)})")
    print(f"events delivered: {delivered:8.1f}/s  while the load ran "
          f"({delivered / produced if produced else 0:.2f} of the rate made)")
    print(f"all delivered:    {len(receiver.times)} of {len(made)}, the last "
          f"{max(drained, 0):.1f} s after the load")
    return 0 if len(receiver.times) >= len(made) else 1
