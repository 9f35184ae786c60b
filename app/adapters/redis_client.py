"""One way to reach Redis, for every user of it (cache, handles, receipts, the outbox):
a single node or a Redis Cluster, from the same settings."""

from __future__ import annotations

from typing import Any

from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.retry import Retry  # the asyncio one: redis.retry.Retry would be ignored
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

Client = Redis | RedisCluster


def redis_client(url: str, *, cluster: bool, timeout_s: float,
                 read_timeout_s: float | None = None) -> Client:
    """A client that retries once on a broken connection (a restarted node) and, for a
    cluster, follows its redirects (MOVED, ASK) and failovers. ``read_timeout_s``: for
    blocking reads that wait longer than a command should."""
    options: dict[str, Any] = {
        "socket_timeout": read_timeout_s or timeout_s,
        "socket_connect_timeout": timeout_s,
        "retry": Retry(ExponentialBackoff(cap=0.2, base=0.02), 1),
        "retry_on_error": [RedisConnectionError, RedisTimeoutError],
    }
    return RedisCluster.from_url(url, **options) if cluster else Redis.from_url(url, **options)
