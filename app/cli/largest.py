"""``contextsynth bench --largest``: each job's largest accepted request, with /healthz
timed beside it and the worker's memory watched.

The service runs as ``contextsynth serve`` (one worker, a new one per request) on a
free loopback port. For each job a request is built as large as the limits accept
(texts at ``CONTEXTSYNTH_MAX_MESSAGE_CHARS``, the body near
``CONTEXTSYNTH_MAX_BODY_BYTES``), once with texts as tool output reads and once as
dense in short distinct facts as they can be (``SHAPES``), and sent while a thread asks
/healthz every 10 ms. The floor is /healthz's own p99 with nothing else running,
measured in the same run. Then the requests whose bulk is how many items they hold,
not how long their texts are (``many``: /summarize-trace with 100,000 actions, /reflect
with 100,000 tool calls, each a line of output), the lists the message limit does not
reach: refused by their own bounds, they should leave /healthz near its floor. Printed
per request: the answer,
its time, /healthz p99 and worst while it ran (and p99 against the floor), and the
rise of the worker's resident memory against the body's size. Targets: /healthz p99
under 100 ms, memory under 3x the body.
"""

from __future__ import annotations

import json
import random
import statistics
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx

from app.cli.procfs import resident, worker_pid
from app.cli.replay import served
from app.settings import Settings

REFLECT_CALLS = 1000  # the most /reflect takes in one iteration
MANY = 100_000  # items of the requests made of many short ones
HEALTH_TARGET_S = 0.1
MEMORY_TARGET = 3.0
_VOCABULARY = ["alpha", "beta", "kafka", "broker", "partition", "error:", "timeout", "retry",
               "src/app/main.py", "line", "42", "ValueError", "def", "return", "aisle"]


def _text(chars: int, seed: int) -> str:
    """Words and numbers in lines, as tool output reads; ``chars`` long."""
    rnd = random.Random(seed)
    words = [rnd.choice(_VOCABULARY) + str(rnd.randrange(1000)) for _ in range(chars // 6)]
    lines = [" ".join(words[i : i + 12]) for i in range(0, len(words), 12)]
    return "\n".join(lines)[:chars]


def _dense(chars: int, seed: int) -> str:
    """Short distinct lines, each an error line, a path or a number: as many facts and
    lines as ``chars`` can hold. Every distinct one used to cost the worker hundreds of
    bytes (24 times the body, read whole)."""
    forms = ("error: {seed}-{n}", "src/m{seed}/f{n}.py", "ok {seed} {n}")
    lines = [forms[n % 3].format(seed=seed, n=n) for n in range(chars // 12)]
    return "\n".join(lines)[:chars]


# The texts of the requests: as tool output reads, and as dense in facts as it can be.
SHAPES = {"words": _text, "dense": _dense}


def requests(texts: int, chars: int, shape: str = "words",
             ) -> dict[str, tuple[str, dict[str, object]]]:
    """Each job's largest request: ``texts`` texts of ``chars`` characters (for /reflect,
    its most calls sharing as much), of a shape from ``SHAPES``. /rescue is left out: it
    needs an LLM."""
    write = SHAPES[shape]
    big = [write(chars, n) for n in range(texts)]
    messages: list[dict[str, object]] = [{"role": "user", "content": "Fix the failing test."}]
    for n, text in enumerate(big):
        messages += [{"role": "assistant", "content": None, "tool_calls": [{
            "id": f"c{n}", "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"cmd": f"cat f{n}.log"})}}]},
            {"role": "tool", "tool_call_id": f"c{n}", "content": text}]
    return {
        "/synthesize": ("synthesize", {"messages": messages}),
        "/compress-history": ("compress-history", {"messages": messages, "mode": "fast"}),
        "/summarize-trace": ("summarize-trace", {"actions": [
            {"action": "bash", "action_input": f"cat f{n}.log", "observation": text}
            for n, text in enumerate(big)], "mode": "fast"}),
        "/summarize-recall": ("summarize-recall", {"query": "Which broker timed out?",
                                                   "memories": [{"id": f"m{n}", "text": t}
                                                                for n, t in enumerate(big)],
                                                   "mode": "extractive"}),
        "/reflect": ("reflect", {"goal": "fix the failing test", "mode": "fast", "tool_calls": [
            {"tool": "bash", "params": f"cat f{n}.log",
             "output": big[n % texts][: texts * chars // REFLECT_CALLS]}
            for n in range(REFLECT_CALLS)]}),
    }


def many(items: int = MANY) -> dict[str, tuple[str, dict[str, object]]]:
    """Requests of ``items`` short items each (a line of output apiece): their cost is
    the number of items, which the lists' bounds, not the body's size, keep in check."""
    tools = ("bash", "read_file", "grep")
    return {
        "/summarize-trace": ("summarize-trace", {"actions": [
            {"action": tools[n % 3], "action_input": f"cat f{n}.log",
             "observation": f"line {n}: ok"} for n in range(items)], "mode": "fast"}),
        "/reflect": ("reflect", {"goal": "fix the failing test", "mode": "fast", "tool_calls": [
            {"tool": tools[n % 3], "params": f"cat f{n}.log", "output": f"line {n}: ok"}
            for n in range(items)]}),
    }


@dataclass(frozen=True, slots=True)
class Largest:
    job: str
    shape: str
    body_bytes: int
    status: int
    seconds: float
    health: tuple[float, ...]
    memory_rise: int

    def health_p99(self) -> float:
        return _p99(self.health)


def _p99(values: tuple[float, ...]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] if ordered else 0.0


def _probe(url: str, stop: threading.Event, health: list[float]) -> None:
    with httpx.Client(base_url=url, timeout=60) as client:
        while not stop.is_set():
            started = time.perf_counter()
            client.get("/healthz")
            health.append(time.perf_counter() - started)
            time.sleep(0.01)


def _watch(pid: int, stop: threading.Event, peak: list[int]) -> None:
    # Apart from the probes, and often: a peak lasts tens of milliseconds, and sampled
    # once a probe (tens of milliseconds apart while the worker is busy) it was missed
    # as often as not.
    while not stop.is_set():
        peak[0] = max(peak[0], resident(pid))
        time.sleep(0.002)


def measure(url: str, path: str, job: str, shape: str, body: bytes, pid: int) -> Largest:
    health: list[float] = []
    before = resident(pid)
    peak = [before]
    stop = threading.Event()
    watchers = [threading.Thread(target=_probe, args=(url, stop, health)),
                threading.Thread(target=_watch, args=(pid, stop, peak))]
    for watcher in watchers:
        watcher.start()
    time.sleep(0.1)
    started = time.perf_counter()
    answer = httpx.post(url + path, content=body, timeout=600,
                        headers={"content-type": "application/json"})
    seconds = time.perf_counter() - started
    stop.set()
    for watcher in watchers:
        watcher.join()
    return Largest(job, shape, len(body), answer.status_code, seconds, tuple(health),
                   peak[0] - before)


def floor(url: str, probes: int = 200) -> float:
    """/healthz p99 with nothing else running."""
    with httpx.Client(base_url=url, timeout=10) as client:
        times = []
        for _ in range(probes):
            started = time.perf_counter()
            client.get("/healthz")
            times.append(time.perf_counter() - started)
            time.sleep(0.002)
    return _p99(tuple(times))


def _bodies(texts: int, chars: int) -> Iterator[tuple[str, str, str, dict[str, object]]]:
    """Each request to send, as (shape, path, job, body), built as it is sent."""
    for shape in SHAPES:
        for path, (job, body) in requests(texts, chars, shape).items():
            yield shape, path, job, body
    for path, (job, body) in many().items():
        yield "many", path, job, body


def run(*, scale: float = 1.0) -> int:
    settings = Settings()
    chars = int(settings.max_message_chars * scale)
    texts = max(1, int(settings.max_body_bytes * 0.85 * scale) // max(chars, 1))
    rows = []
    idle = 0.0
    for shape, path, job, body in _bodies(texts, chars):
        raw = json.dumps(body).encode()
        del body
        # A worker of its own per request: memory one took and kept is not the next's.
        with served() as url:
            pid = worker_pid(url.rsplit(":", 1)[1])
            idle = max(idle, floor(url))
            rows.append(measure(url, path, job, shape, raw, pid))
    print(f"/healthz p99 with nothing running (the floor): {idle * 1000:.1f} ms")
    print(f"{'job':<18}{'shape':<7}{'body MB':>8}{'status':>7}{'time s':>8}{'health p99 ms':>15}"
          f"{'x floor':>9}{'worst ms':>10}{'memory MB':>11}{'x body':>8}")
    for row in rows:
        p99 = row.health_p99()
        print(f"{row.job:<18}{row.shape:<7}{row.body_bytes / 1e6:>8.1f}{row.status:>7}"
              f"{row.seconds:>8.1f}"
              f"{p99 * 1000:>15.0f}{p99 / idle if idle else 0:>9.1f}"
              f"{max(row.health, default=0) * 1000:>10.0f}{row.memory_rise / 1e6:>11.0f}"
              f"{row.memory_rise / row.body_bytes:>8.1f}")
    healthy = sum(r.health_p99() < HEALTH_TARGET_S for r in rows)
    lean = sum(r.memory_rise < MEMORY_TARGET * r.body_bytes for r in rows)
    print(f"targets: /healthz p99 under {HEALTH_TARGET_S * 1000:.0f} ms on {healthy} of "
          f"{len(rows)} requests; memory under {MEMORY_TARGET:g}x the body on {lean} of "
          f"{len(rows)}; median request {statistics.median(r.seconds for r in rows):.1f} s")
    return 0 if all(r.status < 500 for r in rows) else 1
