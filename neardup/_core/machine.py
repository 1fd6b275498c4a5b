"""The machine a run is on: its memory and cores (a container's limits where smaller).

Spark's local mode sizes its heap from them; a Bloom index refuses filters this machine
cannot hold before reading anything."""

from __future__ import annotations

import os

GIB = 1 << 30


def machine_memory() -> int:
    """This machine's memory in bytes: MemTotal, or a smaller cgroup limit (a container)."""
    total = None
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    total = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    if total is None:
        try:
            total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):
            total = 4 * GIB  # unknown: Spark's 1 GiB heap and a little more
    for limit in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(limit, encoding="ascii") as f:
                value = f.read().strip()
        except OSError:
            continue
        if value.isdigit() and 0 < int(value) < total:
            total = int(value)
    return total


def machine_cores() -> int:
    """The cores this process may run on (its affinity, else every core)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1
