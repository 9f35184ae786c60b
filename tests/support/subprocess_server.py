"""The service as a real process under uvicorn, for tests that need real HTTP."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from tests.support.redis_server import free_port


@contextmanager
def running_service(env: dict[str, str] | None = None, workers: int = 1,
                    ready_path: str = "/healthz") -> Iterator[str]:
    """Start ``contextsynth serve`` on a free port; yield its base URL; stop it."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--host", "127.0.0.1", "--port", str(port),
         "--workers", str(workers)],
        env={**os.environ, "CONTEXTSYNTH_LOG_LEVEL": "warning", **(env or {})},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}{ready_path}", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                output = proc.stdout.read().decode() if proc.stdout else ""
                raise RuntimeError(f"the service did not start:\n{output}")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)
