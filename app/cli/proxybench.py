"""``contextsynth bench --proxy``: what proxy mode adds to a provider request.

A stand-in provider answers at once on a free loopback port (a small completion, or a
stream whose first event it sends right away), and the service runs as
``contextsynth serve`` in front of it. Each corpus request (``--steps`` per run) is
sent straight to the provider and through the proxy, one after the other, so noise
hits both; the difference is what the proxy adds: compaction plus forwarding, the
provider's own time excluded. For a streamed answer it prints the delay added to the
first byte, with compaction (mode fast) and without (mode off: the pass-through
alone). Beside it, the in-process engine time on the same requests.
"""

from __future__ import annotations

import http.client
import socket
import statistics
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path

import orjson
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from app.cli.load import bodies
from app.cli.replay import connect, engine_compactor, served

ADDED_MARGIN_MS = 2.0  # p50 added time at most the engine's time plus this
FIRST_BYTE_TARGET_MS = 1.0
_ANSWER = orjson.dumps({
    "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
    "choices": [{"index": 0, "finish_reason": "stop",
                 "message": {"role": "assistant", "content": "ok"}}]})


async def _complete(request: Request) -> Response:
    body = orjson.loads(await request.body())
    if not body.get("stream"):
        return Response(_ANSWER, media_type="application/json")

    async def events() -> AsyncIterator[bytes]:
        for word in ("one", "two", "three"):
            chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                     "choices": [{"index": 0, "delta": {"content": word}}]}
            yield b"data: " + orjson.dumps(chunk) + b"\n\n"
        yield b"data: [DONE]\n\n"
    return StreamingResponse(events(), media_type="text/event-stream")


class StandIn:
    """The provider, answering at once, on a thread of this process."""

    def __init__(self) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = int(s.getsockname()[1])
        app = Starlette(routes=[Route("/v1/chat/completions", _complete, methods=["POST"])])
        self._server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port,
                                                     log_level="warning"))
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    def __enter__(self) -> str:
        self._thread.start()
        while not self._server.started:
            time.sleep(0.02)
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)


def _timed(conn: http.client.HTTPConnection, path: str, body: bytes,
           headers: dict[str, str]) -> tuple[float, float]:
    """Seconds to the first byte of the answer's body, and to its end."""
    started = time.perf_counter()
    conn.request("POST", path, body, headers)
    response = conn.getresponse()
    response.read1(1)
    first = time.perf_counter() - started
    response.read()
    if response.status != 200:
        raise RuntimeError(f"{path} answered {response.status}")
    return first, time.perf_counter() - started


def _ms(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def run(directory: Path | None, steps: int = 4, say: Callable[[str], None] = print) -> int:
    payloads = bodies(directory, steps)
    streamed = [orjson.dumps({**orjson.loads(b), "model": "m", "stream": True})
                for b in payloads]
    plain = [orjson.dumps({**orjson.loads(b), "model": "m"}) for b in payloads]
    engine = engine_compactor()
    engine_s = []
    for body in plain:
        started = time.perf_counter()
        engine(orjson.loads(body)["messages"])
        engine_s.append(time.perf_counter() - started)
    added: list[float] = []
    first_fast: list[float] = []
    first_off: list[float] = []
    json_headers = {"content-type": "application/json"}
    off_headers = {**json_headers, "x-contextsynth-mode": "off"}
    with StandIn() as upstream, served(env={"CONTEXTSYNTH_PROXY_OPENAI_URL":
                                           f"{upstream}/v1"}) as url:
        direct, proxied = connect(upstream), connect(url)
        for body, stream in zip(plain, streamed, strict=True):
            _, straight = _timed(direct, "/v1/chat/completions", body, json_headers)
            _, through = _timed(proxied, "/v1/chat/completions", body, json_headers)
            added.append(through - straight)
            base_first, _ = _timed(direct, "/v1/chat/completions", stream, json_headers)
            fast_first, _ = _timed(proxied, "/v1/chat/completions", stream, json_headers)
            off_first, _ = _timed(proxied, "/v1/chat/completions", stream, off_headers)
            first_fast.append(fast_first - base_first)
            first_off.append(off_first - base_first)
        direct.close()
        proxied.close()
    say(f"{'requests through the proxy (provider excluded)':48} {'p50 ms':>7} {'p99 ms':>7}")
    say("-" * 64)
    rows = (("engine in process, same requests", engine_s), ("added to a request", added),
            ("added to the first streamed byte, fast", first_fast),
            ("added to the first streamed byte, off", first_off))
    for name, values in rows:
        say(f"{name:48} {_ms(values, 0.5):>7.2f} {_ms(values, 0.99):>7.2f}")
    say("-" * 64)
    say(f"{len(plain)} requests; targets: p50 added <= engine p50 + {ADDED_MARGIN_MS:g} ms "
        f"({_ms(added, 0.5):.2f} vs {_ms(engine_s, 0.5) + ADDED_MARGIN_MS:.2f}); first byte "
        f"added < {FIRST_BYTE_TARGET_MS:g} ms (pass-through p50 {_ms(first_off, 0.5):.2f}); "
        f"mean engine {1000 * statistics.fmean(engine_s):.2f} ms")
    return 0
