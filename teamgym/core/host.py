"""Facts about the host a process runs on, shared by the parts that size themselves to it."""

from __future__ import annotations

import os

__all__ = ["available_cores"]


def available_cores() -> int:
    """The CPUs this process may run on: its affinity mask where the OS has one (``taskset``, a container's cpuset),
    else ``os.cpu_count()``. A CPU quota (cgroup ``cpu.max``) is not read: a quota of 1.5 cores on a 2-CPU mask
    counts 2."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
