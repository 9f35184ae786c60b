"""An ASGI app served by uvicorn on a loopback port, in a thread of the test: the one
way the fakes (upstream, LLM, webhook receiver) and the tests serve an app."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from starlette.types import ASGIApp

from tests.support.redis_server import free_port


class ThreadedServer:
    """``app`` on ``port`` (a free one when None), its lifespan run, from ``start`` to
    ``stop``."""

    def __init__(self, app: ASGIApp, port: int | None = None, name: str = "the server") -> None:
        self.port = free_port() if port is None else port
        self._name = name
        self._server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port,
                                                     log_level="warning"))
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    def start(self) -> None:
        self._thread.start()
        deadline = time.monotonic() + 20
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"{self._name} did not start")
            time.sleep(0.02)

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=20)


@contextmanager
def served(app: ASGIApp) -> Iterator[str]:
    """Serve ``app`` until the block ends; yield its base URL."""
    server = ThreadedServer(app)
    server.start()
    try:
        yield f"http://127.0.0.1:{server.port}"
    finally:
        server.stop()
