"""``contextsynth bench --redis``: the service on one Redis node and on a three-master
Redis Cluster, in one run.

Both are started from redis-server (and redis-cli) on free loopback ports, the
service as ``contextsynth serve`` (one worker) against each in turn, and
``--clients`` clients replay the corpus's agent-loop requests to /synthesize for
``--seconds`` (each conversation's dropped spans go to Redis as expand handles).
Printed: requests/s, p50 and p99, failures, and the keys each master holds after:
on the cluster no master should hold more than half.
"""

from __future__ import annotations

from pathlib import Path

from app.cli.load import bodies, drive
from app.cli.redis_nodes import RedisClusterServer, RedisNode
from app.cli.replay import served


def run(directory: Path | None, *, clients: int = 8, seconds: float = 10.0) -> int:
    payloads = bodies(directory, 4)
    rows = []
    with RedisNode() as node, RedisClusterServer(masters=3) as cluster:
        backends: list[tuple[str, RedisNode | RedisClusterServer, bool]] = [
            ("one node", node, False), ("cluster, 3 masters", cluster, True)]
        for name, backend, is_cluster in backends:
            env = {"CONTEXTSYNTH_REDIS_URL": backend.url,
                   "CONTEXTSYNTH_REDIS_CLUSTER": "true" if is_cluster else "false"}
            with served(env=env) as url:
                drive(url, "/synthesize", payloads, clients, 1.0)  # warm up
                done, elapsed, latencies, failed = drive(url, "/synthesize", payloads,
                                                         clients, seconds)
            keys = backend.keys() if isinstance(backend, RedisNode) else \
                backend.keys_per_master()
            ordered = sorted(latencies)
            p50 = ordered[len(ordered) // 2] if ordered else 0.0
            p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] if ordered else 0.0
            rows.append((name, done / elapsed if elapsed else 0.0, p50, p99, failed, keys))
    print(f"{'redis':<20}{'req/s':>8}{'p50 ms':>8}{'p99 ms':>8}{'failed':>7}  keys per master")
    for name, rate, p50, p99, failed, keys in rows:
        spread = ", ".join(str(k) for k in keys.values())
        print(f"{name:<20}{rate:>8.0f}{p50 * 1000:>8.2f}{p99 * 1000:>8.2f}{failed:>7}  {spread}")
    cluster_keys = rows[-1][5]
    total = sum(cluster_keys.values())
    print(f"cluster: the fullest master holds {max(cluster_keys.values()) / total:.0%} of "
          f"{total} keys (target at most 50%)" if total else "cluster: no keys written")
    return 0 if all(r[4] == 0 for r in rows) else 1
