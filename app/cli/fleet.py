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
/metrics); when a whole fleet is in progress at once, the bytes the warm-path caches
hold per agent, and which caches hold the most of them.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
# The caches named beside the warm bytes an agent, the largest first.
_LARGEST = 6


@dataclass(frozen=True, slots=True)
class Agent:
    key: str  # its conversation key, as the service derives it
    bodies: tuple[bytes, ...]  # each call's body, in order


@dataclass(frozen=True, slots=True)
class CallSample:
    """Which calls of a run an agent makes: by default its run's last ``steps`` (the
    longest histories of the corpus's runs, most of them short); with ``from_step``, the
    calls before its steps ``from_step`` to ``from_step + steps - 1`` (runs with fewer
    steps are left out), as a fleet of real agents is mostly in the middle of long runs;
    with ``kb``, ``steps`` calls from the first whose body reaches ``kb`` KB. Drawn either
    of these ways, every text an agent sends but the system prompt is its own
    (``distinct``), as two real agents share no result or thought; by default only the
    task is (agents of one run then share every memo of its other texts)."""

    steps: int
    from_step: int | None = None
    kb: int | None = None

    @property
    def distinct(self) -> bool:
        return self.from_step is not None or self.kb is not None


class NoRuns(ValueError):
    """No run of the corpus has the calls a draw asks for."""


def agents(n: int, draw: CallSample | int, directory: Path | None) -> list[Agent]:
    """``n`` distinct agents over the corpus's runs, ``draw.steps`` calls each (an int:
    the last that many calls of each run)."""
    draw = draw if isinstance(draw, CallSample) else CallSample(draw)
    runs = [(messages, window) for messages in map(load, transcript_files(directory))
            if (window := _window(messages, draw))]
    if not runs:
        where = (f" from step {draw.from_step}" if draw.from_step is not None else
                 f" from a body of {draw.kb} KB" if draw.kb is not None else "")
        raise NoRuns(f"no run of the corpus has {draw.steps} calls{where}")
    out = []
    for i in range(n):
        source, window = runs[i % len(runs)]
        messages = [_own(dict(m), i) if draw.distinct and m.get("role") != "system"
                    else dict(m) for m in source]
        if not draw.distinct:
            task = next((m for m in messages if m.get("role") == "user"), None)
            if task is not None:
                _own(task, i)
        key = conversation_key(None, {"messages": messages}, ("messages",)) or str(i)
        out.append(Agent(key, tuple(orjson.dumps({"messages": messages[:k]})
                                    for k in window)))
    return out


def _own(message: dict[str, Any], agent: int) -> dict[str, Any]:
    """``message`` with its text made this agent's: a line naming the agent after it."""
    content = message.get("content")
    if isinstance(content, str) and content:
        message["content"] = f"{content}\n(agent {agent})"
    elif isinstance(content, list):
        parts = [dict(p) if isinstance(p, dict) else p for p in content]
        text = next((p for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)),
                    None)
        if text is not None:
            text["text"] = f"{text['text']}\n(agent {agent})"
        message["content"] = parts
    return message


def _window(messages: Sequence[dict[str, Any]], draw: CallSample) -> list[int]:
    """The lengths of the histories an agent of this run sends, one call after another;
    none when the run has not the calls ``draw`` asks for."""
    at = sample_steps(messages, None)
    if draw.from_step is not None:
        first = draw.from_step
    elif draw.kb is not None:
        ends = list(itertools.accumulate(len(orjson.dumps(m)) + 1 for m in messages))
        first = next((j for j, k in enumerate(at) if ends[k - 1] >= draw.kb * 1024), len(at))
    else:
        return at[-draw.steps:]
    return at[first:first + draw.steps] if first + draw.steps <= len(at) else []


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
    held: int = 0  # bytes the warm-path caches hold at the end (see /metrics)
    fleet: int = 0  # agents in the whole fleet (``agents`` of them in progress at a time)
    kb: float = 0.0  # the mean size of an agent's last body
    held_by: tuple[tuple[str, int], ...] = ()  # ``held`` by cache, the most first

    @property
    def warm_per_agent(self) -> float | None:
        """The bytes the caches hold per agent, when every agent of the fleet was in
        progress at once (otherwise they hold earlier agents' too, up to their bound)."""
        return self.held / self.agents if self.agents == self.fleet and self.agents else None

    def percentile(self, share: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


def _lookups(url: str) -> dict[tuple[str, str], float]:
    page = httpx.get(f"{url}/metrics", timeout=30).text
    return {(s.labels["cache"], s.labels["result"]): s.value
            for family in text_string_to_metric_families(page)
            if family.name == "contextsynth_warm_lookups" for s in family.samples
            if s.name.endswith("_total")}


def _held(url: str) -> dict[str, int]:
    """The bytes each warm-path cache holds."""
    page = httpx.get(f"{url}/metrics", timeout=30).text
    return {s.labels["cache"]: int(s.value) for family in text_string_to_metric_families(page)
            if family.name == "contextsynth_warm_held" for s in family.samples
            if s.labels.get("unit") == "bytes"}


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
    kb = sum(len(a.bodies[-1]) for a in fleet) / max(len(fleet), 1) / 1024
    held: dict[str, int] = {}
    for url in urls:
        for cache, size in _held(url).items():
            held[cache] = held.get(cache, 0) + size
    return Fleet(active, len(urls), routing, len(latencies), cpu_s, tuple(latencies),
                 rise, _hit_rates(lookups, [_lookups(url) for url in urls]), failures,
                 sum(held.values()), len(fleet), kb,
                 tuple(sorted(held.items(), key=lambda item: -item[1])))


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
        steps: int = 6, clients: int = 8, from_step: int | None = None,
        kb: Sequence[int] = (), say: Callable[[str], None] = print) -> int:
    """The fleet at each of ``counts`` agents in progress; with ``kb``, one process per
    count at each of those transcript sizes (see ``CallSample``)."""
    rows: list[Fleet] = []
    expanded = (0, 0)
    for size in kb or (None,):
        draw = CallSample(steps, from_step, size)
        # The same agents at every count: the largest fleet, run so many at a time.
        fleet = agents(min(max(counts), MAX_AGENTS), draw, directory)
        for n in counts:
            if size is not None or replicas == 1:
                with served() as url:
                    rows.append(measure([url], fleet, n, "one process", by_key(1), clients))
                continue
            expanded = _replicated(rows, fleet, n, replicas, clients)
    _print(rows, expanded, replicas, say)
    return 0 if all(r.failures == 0 for r in rows) else 1


def _replicated(rows: list[Fleet], fleet: Sequence[Agent], n: int, replicas: int,
                clients: int) -> tuple[int, int]:
    """The fleet on ``replicas`` processes routed round-robin, then by the conversation
    key (new processes for each: what one run left is not the next's); how many handles
    made on one expanded on another."""
    with contextlib.ExitStack() as stack:
        # handles expand on any replica through the shared Redis
        env = {"CONTEXTSYNTH_REDIS_URL": stack.enter_context(RedisNode()).url}
        urls = [stack.enter_context(served(env=env)) for _ in range(replicas)]
        rows.append(measure(urls, fleet, n, "round-robin", round_robin(replicas), clients))
    with contextlib.ExitStack() as stack:
        env = {"CONTEXTSYNTH_REDIS_URL": stack.enter_context(RedisNode()).url}
        urls = [stack.enter_context(served(env=env)) for _ in range(replicas)]
        rows.append(measure(urls, fleet, n, "conversation key", by_key(replicas), clients))
        return expand_anywhere(urls, fleet[:n])


def _print(rows: Sequence[Fleet], expanded: tuple[int, int], replicas: int,
           say: Callable[[str], None]) -> None:
    header = (f"{'body KB':>7} {'agents':>6} {'replicas':>8} {'routing':17} {'calls':>6} "
              f"{'CPU ms/call':>11} {'p50 ms':>7} {'p99 ms':>7} {'RSS MB':>7} {'MB/agent':>8} "
              f"{'warm MB/agent':>13} {'bodies hit':>10} {'tails hit':>9}")
    say(header)
    say("-" * len(header))
    for r in rows:
        warm = r.warm_per_agent
        say(f"{r.kb:>7.0f} {r.agents:>6} {r.replicas:>8} {r.routing:17} {r.calls:>6} "
            f"{1000 * r.cpu_s / max(r.calls, 1):>11.2f} {1000 * r.percentile(0.5):>7.2f} "
            f"{1000 * r.percentile(0.99):>7.2f} {r.rss_rise / 1e6:>7.0f} "
            f"{r.rss_rise / 1e6 / max(r.agents, 1):>8.2f} "
            f"{'-' if warm is None else f'{warm / 1e6:.3f}':>13} "
            f"{r.hits.get('resent_bodies', 0.0):>10.0%} {r.hits.get('tails', 0.0):>9.0%}")
    say("-" * len(header))
    # What the warm bytes an agent are (the caches that hold the most): what to cut next.
    for r in rows:
        if r.warm_per_agent is not None and r.held_by:
            top = ", ".join(f"{cache} {size / 1e3 / r.agents:.0f}" for cache, size in
                            r.held_by[:_LARGEST] if size)
            say(f"warm KB/agent by cache, {r.agents} agents of {r.kb:.0f} KB: {top}")
    for kb in dict.fromkeys(r.kb for r in rows):
        ones = [r for r in rows if r.replicas == 1 and r.kb == kb]
        if len(ones) > 1:
            small, large = ones[0], ones[-1]
            ratio = (large.cpu_s / max(large.calls, 1)) / max(
                small.cpu_s / max(small.calls, 1), 1e-9)
            say(f"CPU per call, {large.agents} agents against {small.agents}"
                f"{f' ({kb:.0f} KB bodies)' if len(rows) > len(ones) and replicas == 1 else ''}"
                f": {ratio:.2f}x (target <= 1.3x)")
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
    sizes = list(dict.fromkeys(r.kb for r in rows))
    for kb in sizes:
        routed = [r for r in rows if r.routing != "round-robin" and r.kb == kb]
        largest = max(routed, key=lambda r: r.agents, default=None)
        if largest is not None:
            of = f" ({kb:.0f} KB bodies)" if len(sizes) > 1 else ""
            say(f"memory per active agent with {largest.agents} in progress{of}: "
                f"{largest.rss_rise / 1e6 / max(largest.agents, 1):.2f} MB (target <= 0.8 MB)")
