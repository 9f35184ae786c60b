"""Redis on free loopback ports, for benches and tests: a live Redis Cluster made from
redis-server and ``redis-cli --cluster create`` (the tests' fixture and
``bench --redis`` use the same one)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis
from redis.crc import key_slot

from app.cli.replay import free_port


class RedisNode:
    """One redis-server, no persistence."""

    def __init__(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server must be on PATH")
        self.port = free_port()
        self._proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def __enter__(self) -> RedisNode:
        deadline = time.monotonic() + 30
        while True:
            try:
                _ask(self.port, "PING")
                return self
            except redis.exceptions.RedisError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def __exit__(self, *exc: object) -> None:
        self._proc.kill()
        self._proc.wait(timeout=10)

    def keys(self) -> dict[int, int]:
        return {self.port: int(_ask(self.port, "DBSIZE"))}


class RedisClusterServer:
    def __init__(self, masters: int = 3, replicas: int = 0) -> None:
        binary, cli = shutil.which("redis-server"), shutil.which("redis-cli")
        if binary is None or cli is None:
            raise RuntimeError("redis-server and redis-cli must be on PATH")
        self.binary, self.cli = binary, cli
        self.masters, self.replicas = masters, replicas
        self.ports = [free_port() for _ in range(masters * (1 + replicas))]
        # The bus port defaults to the port + 10,000, past 65,535 for a high free port.
        self._bus = {port: free_port() for port in self.ports}
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        self._dir = Path(tempfile.mkdtemp(prefix="redis-cluster-"))

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.ports[0]}/0"

    def _start_node(self, port: int) -> None:
        self.procs[port] = subprocess.Popen(
            [self.binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--cluster-enabled", "yes",
             "--cluster-config-file", str(self._dir / f"nodes-{port}.conf"),
             "--cluster-node-timeout", "1000", "--cluster-port", str(self._bus[port]),
             "--dir", str(self._dir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def start(self) -> RedisClusterServer:
        for port in self.ports:
            self._start_node(port)
        for port in self.ports:
            self._wait(port, "PING", lambda pong: bool(pong))
        subprocess.run([self.cli, "--cluster", "create",
                        *(f"127.0.0.1:{p}" for p in self.ports),
                        "--cluster-replicas", str(self.replicas), "--cluster-yes"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=60)
        for port in self.ports:
            self._wait(port, "CLUSTER INFO", lambda info: "cluster_state:ok" in info)
        # A replica still in its first sync cannot be promoted: wait until each follows.
        for port in self.ports:
            self._wait(port, "ROLE", lambda role: role[0] == "master" or role[3] == "connected")
        return self

    def _wait(self, port: int, command: str, ready: Callable[[Any], bool],
              timeout_s: float = 30) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                if ready(_ask(port, *command.split())):
                    return
            except redis.exceptions.RedisError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"redis node {port} did not become ready")
            time.sleep(0.05)

    def master_ports(self) -> list[int]:
        """The nodes that serve slots now (a promoted replica among them)."""
        found = []
        for port, proc in self.procs.items():
            if proc.poll() is not None:
                continue
            if _ask(port, "ROLE")[0] == "master":
                found.append(port)
        return found

    def master_of(self, key: str) -> int:
        """The port of the master that serves ``key``'s slot now."""
        slot = key_slot(key.encode())
        for port in self.master_ports():
            for start, end, master, *_ in _ask(port, "CLUSTER", "SLOTS"):
                if start <= slot <= end:
                    return int(master[1])
        raise LookupError(f"no master serves slot {slot}")

    def keys_per_master(self) -> dict[int, int]:
        return {port: int(_ask(port, "DBSIZE")) for port in self.master_ports()}

    def kill(self, port: int) -> None:
        proc = self.procs.pop(port)
        proc.kill()
        proc.wait(timeout=10)

    def stop(self) -> None:
        for proc in self.procs.values():
            proc.kill()
            proc.wait(timeout=10)
        self.procs.clear()
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> RedisClusterServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _ask(port: int, *command: str) -> Any:
    """One command to one node, its answer decoded."""
    client: Any = redis.Redis(port=port, socket_connect_timeout=0.5, decode_responses=True)
    try:
        return client.execute_command(*command)
    finally:
        client.close()
