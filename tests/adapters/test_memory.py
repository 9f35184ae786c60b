"""The worker's memory limit, as its container's cgroup says it."""

from pathlib import Path

from app.adapters.memory import container_memory_limit


def _files(**found: str):
    def read(path: Path) -> str | None:
        return found.get(path.name)
    return read


def test_the_cgroup_limit_is_read_in_either_version():
    assert container_memory_limit(_files(**{"memory.max": "1073741824\n"})) == 1 << 30
    assert container_memory_limit(_files(**{"memory.limit_in_bytes": "536870912\n"})) \
        == 1 << 29


def test_no_limit_is_none():
    assert container_memory_limit(_files(**{"memory.max": "max\n"})) is None
    assert container_memory_limit(_files(**{"memory.limit_in_bytes":
                                            "9223372036854771712\n"})) is None
    assert container_memory_limit(_files()) is None
