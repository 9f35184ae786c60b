"""The service as a real process under uvicorn, for tests that need real HTTP."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.support.redis_server import free_port


@contextmanager
def running_service(env: dict[str, str] | None = None, workers: int = 1,
                    ready_path: str = "/healthz", log: Path | None = None) -> Iterator[str]:
    """Start ``contextsynth serve`` on a free port; yield its base URL; stop it.
    ``log``: a file that gets everything the service writes (else a temporary one)."""
    with service_process(env, workers, ready_path, log) as (_, url):
        yield url


@contextmanager
def service_process(env: dict[str, str] | None = None, workers: int = 1,
                    ready_path: str = "/healthz", log: Path | None = None,
                    ) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """As ``running_service``, with the process itself (to kill it); one already gone
    at the end is left as it is."""
    port = free_port()
    # A file, never a pipe: a pipe nobody reads fills with the service's warnings, and
    # the service then blocks writing a log line (it once could not even shut down).
    scratch = None
    if log is None:
        scratch = tempfile.TemporaryDirectory(prefix="contextsynth-serve-")
        log = Path(scratch.name) / "serve.log"
    sink = open(log, "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--host", "127.0.0.1", "--port", str(port),
         "--workers", str(workers)],
        env={**os.environ, "CONTEXTSYNTH_LOG_LEVEL": "warning", **(env or {})},
        stdout=sink, stderr=subprocess.STDOUT)
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
                raise RuntimeError(f"the service did not start:\n{log_text(log)}")
            time.sleep(0.2)
        yield proc, url
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=20)
        sink.close()
        if scratch is not None:
            scratch.cleanup()


def log_text(log: Path | None) -> str:
    return log.read_text(errors="replace") if log is not None else ""
