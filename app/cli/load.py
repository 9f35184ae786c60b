"""``contextsynth bench --load``: throughput of the service under concurrent clients.

The service runs as ``contextsynth serve`` on a free loopback port, with one worker
and then two (sharing a redis-server of their own, as several workers must). N
clients (threads, each with one keep-alive connection) send the corpus's
agent-loop requests for a fixed time, to ``/synthesize`` and then to an echo route
that sends the body straight back: the most the HTTP stack can do with
the same bodies, the ceiling the job is measured against. Prints requests per second
and the p50 and p99 latency of each. Clients and time are bounded, and nothing leaves
the machine.
"""

from __future__ import annotations

import contextlib
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson

from app.cli.progress import Say, to_stderr
from app.cli.redis_nodes import RedisNode
from app.cli.replay import served
from app.cli.wire import LeanConnection
from app.corpus import load, transcript_files
from app.evaluation.replay import sample_steps

MAX_CLIENTS = 64
MAX_SECONDS = 60.0
_ROUTES = ("/synthesize", "/bench/echo")


@dataclass(frozen=True, slots=True)
class Load:
    workers: int
    route: str
    clients: int
    requests: int
    seconds: float
    latencies: tuple[float, ...]
    failures: int

    @property
    def per_second(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    def percentile(self, share: float) -> float:
        ordered = sorted(self.latencies)
        if not ordered:
            return 0.0
        return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def bodies(directory: Path | None, steps: int | None) -> list[bytes]:
    """The agent-loop requests of the corpus, encoded once."""
    out = []
    for path in transcript_files(directory):
        messages = load(path)
        out += [orjson.dumps({"messages": messages[:k]}) for k in sample_steps(messages, steps)]
    return out


def drive(url: str, route: str, payloads: Sequence[bytes], clients: int,
          seconds: float) -> tuple[int, float, list[float], int]:
    """Requests made, the time they took, each one's latency, and failures."""
    latencies: list[list[float]] = [[] for _ in range(clients)]
    failures = [0] * clients
    start = threading.Barrier(clients + 1)
    deadline = 0.0

    def client(n: int) -> None:
        conn = LeanConnection(url)
        start.wait()
        i = n
        try:
            while time.perf_counter() < deadline:
                began = time.perf_counter()
                status, _ = conn.post(route, payloads[i % len(payloads)])
                latencies[n].append(time.perf_counter() - began)
                if status != 200:
                    failures[n] += 1
                i += clients
        finally:
            conn.close()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    deadline = time.perf_counter() + seconds
    began = time.perf_counter()
    start.wait()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - began
    flat = [x for each in latencies for x in each]
    return len(flat), elapsed, flat, sum(failures)


def run(directory: Path | None, *, clients: int = 8, seconds: float = 10.0,
        workers: Sequence[int] = (1, 2), steps: int | None = 4,
        say: Callable[[str], None] = print, progress: Say = to_stderr) -> int:
    clients = max(1, min(clients, MAX_CLIENTS))
    seconds = max(1.0, min(seconds, MAX_SECONDS))
    payloads = bodies(directory, steps)
    rows: list[Load] = []
    for count in workers:
        with contextlib.ExitStack() as stack:
            env = {"CONTEXTSYNTH_BENCH_ECHO": "1"}
            if count > 1:  # several workers share their expand handles through Redis
                env["CONTEXTSYNTH_REDIS_URL"] = stack.enter_context(RedisNode()).url
            url = stack.enter_context(served(workers=count, env=env))
            for route in _ROUTES:
                progress(f"{count} worker(s), {route}: {clients} clients for {seconds:g} s")
                drive(url, route, payloads, clients, 1.0)  # warm the caches and the pool
                done, elapsed, latencies, failed = drive(url, route, payloads, clients,
                                                         seconds)
                rows.append(Load(count, route, clients, done, elapsed, tuple(latencies),
                                 failed))
    header = (f"{'workers':>7} {'route':14} {'clients':>7} {'req/s':>8} {'p50 ms':>7} "
              f"{'p99 ms':>7} {'failed':>6}")
    say(header)
    say("-" * len(header))
    for r in rows:
        say(f"{r.workers:>7} {r.route:14} {r.clients:>7} {r.per_second:>8.0f} "
            f"{1000 * r.percentile(0.5):>7.2f} {1000 * r.percentile(0.99):>7.2f} "
            f"{r.failures:>6}")
    say("-" * len(header))
    for count in workers:
        job, echo = (next(r for r in rows if r.workers == count and r.route == route)
                     for route in _ROUTES)
        share = job.per_second / echo.per_second if echo.per_second else 0.0
        say(f"{count} worker(s): /synthesize at {share:.0%} of the echo route's requests/s "
            f"(the echo is the floor: the same bodies with no work behind them); mean latency "
            f"{1000 * statistics.fmean(job.latencies or (0.0,)):.2f} ms")
    return 0 if all(r.failures == 0 for r in rows) else 1
