"""The live Redis Cluster the tests start: the bench's own launcher."""

from app.cli.redis_nodes import RedisClusterServer

__all__ = ["RedisClusterServer"]
