"""Redis behind the Cache Protocol: a single node, or a Redis Cluster."""

from __future__ import annotations

from opentelemetry.trace import Tracer

from app.adapters.redis_client import redis_client
from app.adapters.tracing import NO_TRACER


class RedisCache:
    def __init__(self, url: str, *, cluster: bool = False, timeout_s: float = 0.5,
                 tracer: Tracer = NO_TRACER) -> None:
        self._client = redis_client(url, cluster=cluster, timeout_s=timeout_s, tracer=tracer)

    async def get(self, key: str) -> bytes | None:
        value = await self._client.get(key)
        if value is not None and not isinstance(value, bytes):
            raise TypeError(f"unexpected {type(value).__name__} from Redis")
        return value

    @property
    def healthy(self) -> bool:
        return True  # errors reach the caller as exceptions (see FailOpenCache)

    @property
    def generation(self) -> int:
        return 0  # FailOpenCache watches for losses

    async def start(self) -> None:
        return None

    async def set(self, key: str, value: bytes, ttl_s: float) -> None:
        await self._client.set(key, value, px=max(int(ttl_s * 1000), 1))

    async def add(self, key: str, value: bytes, ttl_s: float) -> bool:
        return bool(await self._client.set(key, value, px=max(int(ttl_s * 1000), 1), nx=True))

    async def delete(self, key: str) -> None:
        await self._client.delete(key)

    async def ping(self) -> None:
        await self._client.ping()  # type: ignore[misc]  # redis' stubs mix sync and async

    async def aclose(self) -> None:
        await self._client.aclose()
