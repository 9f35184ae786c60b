"""``contextsynth bench --load --agents N [--replicas R]``: a fleet of distinct agents.

Each agent is a corpus run made its own (its task names the agent, so no two share a
conversation, a cache entry or a key) and calls step by step, each call the whole
history so far, as agents send it; the agents' steps are interleaved, so a process
holds every conversation in progress at once. Clients (threads with keep-alive
connections) share the agents. With one replica, the run shows what N conversations
cost one process; with R replicas (each ``contextsynth serve`` with one worker, all
sharing a redis-server of their own), the same agents run twice, routed round-robin
(a plain Service) and by a hash of the conversation key (the shipped ingress), and a
handle from the first call of every agent is expanded on another replica at the end.

Every size sends the same calls: the largest fleet's agents, N in progress at a time
(then the next N), so that only how many conversations a process holds at once
differs. Printed per run: calls, CPU per call of the serving processes (from
/proc), p50 and p99 latency, their resident memory's rise and its share per agent
in progress, and the warm path's hit rate (the resent-body and tail caches, from
/metrics).
"""

from __future__ import annotations

import contextlib
import threading
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx
import orjson
from prometheus_client.parser import text_string_to_metric_families

from app.cli.procfs import cpu_seconds, resident, worker_pid
from app.cli.redis_nodes import RedisNode
from app.cli.replay import served
from app.cli.wire import LeanConnection
from app.corpus import load, transcript_files
from app.evaluation.replay import sample_steps
from app.service.conversation import conversation_key

MAX_AGENTS = 5_000


@dataclass(frozen=True, slots=True)
class Agent:
    key: str  # its conversation key, as the service derives it
    bodies: tuple[bytes, ...]  # each call's body, in order


def agents(n: int, steps: int, directory: Path | None) -> list[Agent]:
    """``n`` distinct agents over the corpus's runs, ``steps`` calls each."""
    files = transcript_files(directory)
    out = []
    for i in range(n):
        messages = [dict(m) for m in load(files[i % len(files)])]
        task = next((m for m in messages if m.get("role") == "user"), None)
        if task is not None and isinstance(task.get("content"), str):
            task["content"] = f"{task['content']}\n(agent {i})"
        key = conversation_key(None, {"messages": messages}, ("messages",)) or str(i)
        out.append(Agent(key, tuple(orjson.dumps({"messages": messages[:k]})
                                    for k in _window(messages, steps))))
    return out


def _window(messages: Sequence[dict[str, object]], steps: int) -> list[int]:
    """The calls before the run's last ``steps`` assistant steps, one after another, as
    an agent makes them (the longest histories of the run)."""
    return sample_steps(messages, None)[-steps:]


Router = Callable[[Agent, int], int]  # (agent, its call number) -> replica


def round_robin(replicas: int) -> Router:
    counter = iter(range(1 << 62))
    lock = threading.Lock()

    def route(_: Agent, __: int) -> int:
        with lock:
            return next(counter) % replicas
    return route


def by_key(replicas: int) -> Router:
    return lambda agent, _: zlib.crc32(agent.key.encode()) % replicas


@dataclass(frozen=True, slots=True)
class Fleet:
    agents: int  # in progress at once
    replicas: int
    routing: str
    calls: int
    cpu_s: float
    latencies: tuple[float, ...]
    rss_rise: int
    hits: dict[str, float]  # cache -> share of lookups that hit
    failures: int

    def percentile(self, share: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


def _lookups(url: str) -> dict[tuple[str, str], float]:
    page = httpx.get(f"{url}/metrics", timeout=30).text
    return {(s.labels["cache"], s.labels["result"]): s.value
            for family in text_string_to_metric_families(page)
            if family.name == "contextsynth_warm_lookups" for s in family.samples
            if s.name.endswith("_total")}


def _hit_rates(before: list[dict[tuple[str, str], float]],
               after: list[dict[tuple[str, str], float]]) -> dict[str, float]:
    totals: dict[str, list[float]] = {}
    for old, new in zip(before, after, strict=True):
        for (cache, result), value in new.items():
            counts = totals.setdefault(cache, [0.0, 0.0])
            grown = value - old.get((cache, result), 0.0)
            counts[1] += grown
            if result == "hit":
                counts[0] += grown
    return {cache: hit / seen for cache, (hit, seen) in totals.items() if seen}


def drive(urls: Sequence[str], fleet: Sequence[Agent], active: int, route: Router,
          clients: int) -> tuple[list[float], int]:
    """Every agent's calls in order, ``active`` agents at a time with their steps
    interleaved (then the next ``active``); latencies and failures. Every fleet size
    so sends the same calls: only how many conversations are in progress differs."""
    latencies: list[list[float]] = [[] for _ in range(clients)]
    failures = [0] * clients

    def client(n: int) -> None:
        conns = [LeanConnection(url) for url in urls]
        try:
            for start in range(0, len(fleet), active):
                mine = fleet[start:start + active][n::clients]
                for step in range(max((len(a.bodies) for a in mine), default=0)):
                    for agent in mine:
                        if step >= len(agent.bodies):
                            continue
                        began = time.perf_counter()
                        status, _ = conns[route(agent, step)].post("/synthesize",
                                                                   agent.bodies[step])
                        latencies[n].append(time.perf_counter() - began)
                        failures[n] += status != 200
        finally:
            for conn in conns:
                conn.close()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [x for each in latencies for x in each], sum(failures)


def measure(urls: Sequence[str], fleet: Sequence[Agent], active: int, routing: str,
            route: Router, clients: int) -> Fleet:
    pids = [worker_pid(url.rsplit(":", 1)[1]) for url in urls]
    cpu, rss = [cpu_seconds(p) for p in pids], [resident(p) for p in pids]
    lookups = [_lookups(url) for url in urls]
    latencies, failures = drive(urls, fleet, active, route, clients)
    cpu_s = sum(cpu_seconds(p) - c for p, c in zip(pids, cpu, strict=True))
    rise = sum(resident(p) - r for p, r in zip(pids, rss, strict=True))
    return Fleet(active, len(urls), routing, len(latencies), cpu_s, tuple(latencies),
                 rise, _hit_rates(lookups, [_lookups(url) for url in urls]), failures)


def expand_anywhere(urls: Sequence[str], fleet: Sequence[Agent]) -> tuple[int, int]:
    """Each agent's first dropped span, made on one replica, expanded on the next:
    how many of them expand, of how many."""
    found = tried = 0
    with httpx.Client(timeout=60) as client:
        for n, agent in enumerate(fleet):
            made = client.post(f"{urls[n % len(urls)]}/synthesize", content=agent.bodies[-1],
                               headers={"content-type": "application/json"}).json()
            dropped = made.get("receipt", {}).get("dropped", [])
            if not dropped:
                continue
            tried += 1
            other = urls[(n + 1) % len(urls)]
            found += client.get(f"{other}/expand/{dropped[0]['handle']}").status_code == 200
    return found, tried


def run(directory: Path | None, *, counts: Sequence[int], replicas: int = 1,
        steps: int = 6, clients: int = 8, say: Callable[[str], None] = print) -> int:
    rows: list[Fleet] = []
    expanded = (0, 0)
    # The same agents at every size: the largest fleet, run so many at a time.
    fleet = agents(min(max(counts), MAX_AGENTS), steps, directory)
    for n in counts:
        # New processes per size and routing: what one run left is not the next's.
        with contextlib.ExitStack() as stack:
            env = {}
            if replicas > 1:  # handles expand on any replica through the shared Redis
                env["CONTEXTSYNTH_REDIS_URL"] = stack.enter_context(RedisNode()).url
            urls = [stack.enter_context(served(env=env)) for _ in range(replicas)]
            if replicas == 1:
                rows.append(measure(urls, fleet, n, "one process", by_key(1), clients))
                continue
            rows.append(measure(urls, fleet, n, "round-robin", round_robin(replicas),
                                clients))
        with contextlib.ExitStack() as stack:
            env = {"CONTEXTSYNTH_REDIS_URL": stack.enter_context(RedisNode()).url}
            urls = [stack.enter_context(served(env=env)) for _ in range(replicas)]
            rows.append(measure(urls, fleet, n, "conversation key", by_key(replicas),
                                clients))
            expanded = expand_anywhere(urls, fleet[:n])
    _print(rows, expanded, replicas, say)
    return 0 if all(r.failures == 0 for r in rows) else 1


def _print(rows: Sequence[Fleet], expanded: tuple[int, int], replicas: int,
           say: Callable[[str], None]) -> None:
    header = (f"{'agents':>6} {'replicas':>8} {'routing':17} {'calls':>6} {'CPU ms/call':>11} "
              f"{'p50 ms':>7} {'p99 ms':>7} {'RSS MB':>7} {'MB/agent':>8} {'bodies hit':>10} "
              f"{'tails hit':>9}")
    say(header)
    say("-" * len(header))
    for r in rows:
        say(f"{r.agents:>6} {r.replicas:>8} {r.routing:17} {r.calls:>6} "
            f"{1000 * r.cpu_s / max(r.calls, 1):>11.2f} {1000 * r.percentile(0.5):>7.2f} "
            f"{1000 * r.percentile(0.99):>7.2f} {r.rss_rise / 1e6:>7.0f} "
            f"{r.rss_rise / 1e6 / max(r.agents, 1):>8.2f} "
            f"{r.hits.get('resent_bodies', 0.0):>10.0%} {r.hits.get('tails', 0.0):>9.0%}")
    say("-" * len(header))
    ones = [r for r in rows if r.replicas == 1]
    if len(ones) > 1:
        small, large = ones[0], ones[-1]
        ratio = (large.cpu_s / max(large.calls, 1)) / max(small.cpu_s / max(small.calls, 1),
                                                          1e-9)
        say(f"CPU per call, {large.agents} agents against {small.agents}: {ratio:.2f}x "
            "(target <= 1.3x)")
    if replicas > 1:
        for n in sorted({r.agents for r in rows}):
            spread, keyed = (next(r for r in rows if r.agents == n and r.routing == name)
                             for name in ("round-robin", "conversation key"))
            cost = (spread.cpu_s / max(spread.calls, 1)) / max(
                keyed.cpu_s / max(keyed.calls, 1), 1e-9)
            say(f"{n} agents on {replicas} replicas: round-robin costs {cost:.2f}x the CPU "
                "per call of routing by the conversation key")
        say(f"handles made on one replica and expanded on another: {expanded[0]} of "
            f"{expanded[1]}")
    # Caches fill to their bounds whatever the size (the same calls pass through): the
    # share per agent is the largest fleet's.
    routed = [r for r in rows if r.routing != "round-robin"]
    largest = max(routed, key=lambda r: r.agents, default=None)
    if largest is not None:
        say(f"memory per active agent with {largest.agents} in progress: "
            f"{largest.rss_rise / 1e6 / max(largest.agents, 1):.2f} MB (target <= 0.8 MB)")
