"""What the benches read of the processes they start, from /proc (Linux)."""

from __future__ import annotations

from pathlib import Path

_TICKS = 100  # clock ticks per second in /proc/<pid>/stat (USER_HZ)


def resident(pid: int) -> int:
    """The process's resident memory, in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def cpu_seconds(pid: int) -> float:
    """The CPU time the process has used, user and system."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def worker_pid(port: str) -> int:
    """The process serving ``port`` (the bench started it: its command line names it)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"serve" in command and port.encode() in command:
            return int(entry.name)
    raise RuntimeError(f"no process serves port {port}")
