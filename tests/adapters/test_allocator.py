"""The worker gives back what one large request took: with the allocator set as
``serve`` sets it, a freed block of megabytes leaves the process, where glibc's own
adaptive threshold keeps it resident."""

import subprocess
import sys

from app.adapters import allocator

# In a process of its own: the setting is the process's for good.
_LEFT_RESIDENT = """
import sys
from app.adapters.allocator import return_large_blocks

def resident():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024

took = return_large_blocks(int(sys.argv[1]))
body = bytearray(8 << 20)  # a first large body: mapped, then unmapped when freed...
del body
body = bytearray(8 << 20)  # ...so glibc serves the next from its heap,
after = bytearray(200_000)  # under something allocated after it
before = resident()
del body
print(took, (before - resident()) >> 20)
"""


def _freed_mb(threshold: int) -> tuple[bool, int]:
    done = subprocess.run([sys.executable, "-c", _LEFT_RESIDENT, str(threshold)],
                          capture_output=True, text=True, check=True, timeout=60)
    took, freed = done.stdout.split()
    return took == "True", int(freed)


def test_a_freed_large_block_leaves_the_worker():
    assert _freed_mb(131_072) == (True, 8)
    assert _freed_mb(0) == (False, 0)  # glibc's own threshold: the 8 MB stay


class FakeLibrary:
    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []

    def mallopt(self, param: int, value: int, /) -> int:
        self.calls.append((param, value))
        return 1


def test_the_threshold_is_set_once_and_zero_leaves_the_allocator_alone():
    fake = FakeLibrary()
    assert allocator.return_large_blocks(131_072, fake)
    assert not allocator.return_large_blocks(0, fake)
    assert fake.calls == [(-3, 131_072)]
