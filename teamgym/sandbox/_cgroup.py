"""Per-role memory cgroups of one fork server (stdlib only).

Each server makes ``teamgym-sandbox-<pid>/program`` and ``.../judge`` below its own memory cgroup. A job's
processes join their role's cgroup before they drop privileges, and the cgroup's limit is the job's
``memory_mb``: memory held by any means (heap, ``memfd``, tmpfs files, pipe buffers, every process of the job)
counts, and the kernel's OOM killer ends the job inside its cgroup, never the host. After the job the server
reads the cgroup's OOM-kill counter to report ``memory``.

Where the host lets a root server create memory cgroups: cgroup v1 (the ``memory`` hierarchy). On cgroup v2 a
server would need a delegated subtree it is alone in, which a process started by the trainer never has, so
there (and for a non-root server) :func:`create` returns ``None`` and the limits fall back to rlimits, the
tmpfs size and the seccomp filter (see docs/sandbox.md).
"""

from __future__ import annotations

import os

ROLES = ("program", "judge")
_PREFIX = "teamgym-sandbox-"


class MemoryCgroups:
    """The ``program`` and ``judge`` memory cgroups of one server (cgroup v1)."""

    version = "v1"

    def __init__(self, base: str):
        self.base = base
        self.parent_fd = os.open(os.path.dirname(base), os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        self.dir_fds: dict[str, int] = {}
        self.limit_mb: dict[str, int] = {}
        for role in ROLES:
            os.mkdir(os.path.join(base, role), 0o755)
            self.dir_fds[role] = os.open(os.path.join(base, role), os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        self.has_memsw = os.path.exists(os.path.join(base, ROLES[0], "memory.memsw.limit_in_bytes"))

    def procs_fd(self, role: str) -> int:
        """A write-only fd of the role's ``cgroup.procs`` (a child writes ``0`` to it to join)."""
        return self._open(role, "cgroup.procs", os.O_WRONLY)

    def set_limit(self, role: str, memory_mb: int) -> None:
        """Bound the role's memory (and memory + swap) to ``memory_mb`` MiB."""
        if self.limit_mb.get(role) == memory_mb:
            return
        value = str(int(memory_mb) << 20)
        files = ["memory.limit_in_bytes"] + (["memory.memsw.limit_in_bytes"] if self.has_memsw else [])
        if memory_mb > self.limit_mb.get(role, float("inf")):  # new cgroups start unlimited
            files.reverse()  # memsw >= memory at every moment
        for name in files:
            self._write(role, name, value)
        self.limit_mb[role] = memory_mb

    def oom_kills(self, role: str) -> int:
        """How many processes the OOM killer ended in the role's cgroup so far."""
        fd = self._open(role, "memory.oom_control", os.O_RDONLY)
        try:
            text = os.read(fd, 4096).decode()
        finally:
            os.close(fd)
        for line in text.splitlines():
            name, _, value = line.partition(" ")
            if name == "oom_kill":
                return int(value)
        return 0

    def close(self) -> None:
        """Remove the cgroups (every job process is dead by now)."""
        for role, fd in self.dir_fds.items():
            os.close(fd)
            try:
                os.rmdir(f"{os.path.basename(self.base)}/{role}", dir_fd=self.parent_fd)
            except OSError:
                pass
        try:
            os.rmdir(os.path.basename(self.base), dir_fd=self.parent_fd)
        except OSError:
            pass
        os.close(self.parent_fd)

    def _open(self, role: str, name: str, flags: int) -> int:
        return os.open(name, flags | os.O_CLOEXEC, dir_fd=self.dir_fds[role])

    def _write(self, role: str, name: str, value: str) -> None:
        fd = self._open(role, name, os.O_WRONLY)
        try:
            os.write(fd, value.encode())
        finally:
            os.close(fd)


def _memory_v1_dir() -> str | None:
    """The folder of this process's cgroup in the v1 ``memory`` hierarchy, or ``None``."""
    path = None
    with open("/proc/self/cgroup") as fh:
        for line in fh:
            _, controllers, where = line.rstrip("\n").split(":", 2)
            if "memory" in controllers.split(","):
                path = where
    if path is None:
        return None
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            fields = line.split()
            dash = fields.index("-")
            fstype, options = fields[dash + 1], fields[dash + 3].split(",")
            root, point = fields[3], fields[4]
            if fstype == "cgroup" and "memory" in options and (path == root or path.startswith(root.rstrip("/") + "/")):
                return os.path.join(point, os.path.relpath(path, root))
    return None


def _remove_stale(parent: str) -> None:
    """Remove the cgroups of servers that died without cleaning up (killed with the host)."""
    for name in os.listdir(parent):
        if not name.startswith(_PREFIX):
            continue
        try:
            os.kill(int(name[len(_PREFIX) :]), 0)
            continue
        except ProcessLookupError:
            pass
        except (ValueError, PermissionError):
            continue
        for role in ROLES:
            try:
                os.rmdir(os.path.join(parent, name, role))
            except OSError:
                pass
        try:
            os.rmdir(os.path.join(parent, name))
        except OSError:
            pass


def create() -> tuple[MemoryCgroups | None, str | None]:
    """This server's memory cgroups, or ``(None, why not)``. Call before ``pivot_root`` (needs /proc, /sys)."""
    if os.geteuid() != 0:
        return None, "not root: memory cgroups need a root server"
    try:
        parent = _memory_v1_dir()
        if parent is None or not os.path.isdir(parent):
            return None, "no cgroup v1 memory hierarchy (cgroup v2 needs a delegated subtree)"
        _remove_stale(parent)
        base = os.path.join(parent, f"{_PREFIX}{os.getpid()}")
        os.mkdir(base, 0o755)
        return MemoryCgroups(base), None
    except OSError as exc:
        return None, f"memory cgroups could not be created: {exc}"
