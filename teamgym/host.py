"""Facts about the host a process runs on, shared by the parts that size themselves to it."""

from __future__ import annotations

import functools
import math
import os
import re
from pathlib import Path

__all__ = ["available_cores", "cpu_quota"]


def available_cores() -> int:
    """The cores this process can keep busy: its CPU affinity mask where the OS has one (``taskset``, a container's
    cpuset; else ``os.cpu_count()``), capped by a cgroup CPU quota (``docker --cpus 1.5`` gives 2: a quota of 1.5
    cores still lets two threads run, each part of the time), never below 1."""
    try:
        cores = len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    quota = _process_quota()
    return max(1, min(cores, math.ceil(quota))) if quota is not None else cores


@functools.lru_cache(maxsize=1)
def _process_quota() -> float | None:
    """:func:`cpu_quota` read once per process (about 0.2 ms: the sandbox asks for every job it is given)."""
    return cpu_quota()


def cpu_quota(mountinfo: str | Path = "/proc/self/mountinfo", cgroup: str | Path = "/proc/self/cgroup",
              ) -> float | None:
    """The tightest CPU quota, in cores, over this process's cgroups and their ancestors (cgroup v2 ``cpu.max``,
    cgroup v1 ``cpu.cfs_quota_us / cpu.cfs_period_us``); ``None`` where none is set or none can be read (a file that
    does not parse counts as none: this never raises)."""
    try:
        groups = Path(cgroup).read_text(errors="surrogateescape").splitlines()
        mounts = Path(mountinfo).read_text(errors="surrogateescape").splitlines()
    except OSError:
        return None
    paths = {}  # "v2" / "v1": the process's cgroup path in that hierarchy
    for line in groups:
        number, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if number == "0" and not controllers:
            paths["v2"] = path
        elif "cpu" in controllers.split(","):
            paths["v1"] = path
    quotas = []
    for line in mounts:
        fields = line.split()
        if " - " not in line or len(fields) < 5:
            continue
        root, mount_point = _unescape(fields[3]), _unescape(fields[4])
        fstype, _source, options = (line.split(" - ", 1)[1].split() + ["", "", ""])[:3]
        if fstype == "cgroup2":
            version = "v2"
        elif fstype == "cgroup" and "cpu" in options.split(","):
            version = "v1"
        else:
            continue
        path = paths.get(version)
        if path is None or ".." in path.split("/") or ".." in root.split("/"):
            continue  # outside this cgroup namespace's view (a mount from another namespace): unknown
        if root == "/":
            relative = path
        elif path == root or path.startswith(root + "/"):  # the mount shows a subtree (a container's view)
            relative = path[len(root):]
        else:
            continue
        quotas += _quotas(Path(mount_point), relative, version)
    return min(quotas) if quotas else None


def _unescape(field: str) -> str:
    """A mountinfo path field as the path: the kernel writes space, tab, newline and backslash as octal escapes."""
    return re.sub(r"\\([0-7]{3})", lambda match: chr(int(match[1], 8)), field)


def _quotas(mount_point: Path, relative: str, version: str) -> list[float]:
    """The quotas set on ``relative`` and each of its ancestors up to the mount point."""
    out = []
    parts = [part for part in relative.split("/") if part]
    for depth in range(len(parts), -1, -1):
        directory = mount_point.joinpath(*parts[:depth])
        try:
            if version == "v2":
                quota, period = (directory / "cpu.max").read_text().split()[:2]
                if quota != "max" and float(period) > 0:
                    out.append(float(quota) / float(period))
            else:
                quota = float((directory / "cpu.cfs_quota_us").read_text())
                period = float((directory / "cpu.cfs_period_us").read_text())
                if quota > 0 and period > 0:
                    out.append(quota / period)
        except (OSError, ValueError):  # no such file at this level, or one that does not parse
            continue
    return out
