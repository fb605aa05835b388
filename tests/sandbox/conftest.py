"""Fixtures for the sandbox tests: a small pool, an outer guard for hostile tests, leak checks."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest

from teamgym.sandbox import Sandbox

_CGROUP_ROOTS = {"pids": {"pids.max": "2048"}, "memory": {"memory.limit_in_bytes": str(6 << 30)}}


class OuterGuard:
    """cgroups (pids <= 2048, memory <= 6 GiB) around the fork servers: a second wall, independent of the
    sandbox, so a broken sandbox running a fork or memory bomb cannot take the test machine down.
    Best effort: needs root and writable cgroup v1 controllers; otherwise ``active`` is False."""

    def __init__(self) -> None:
        self.dirs: list[str] = []
        if os.geteuid() != 0:
            return
        for controller, settings in _CGROUP_ROOTS.items():
            path = f"/sys/fs/cgroup/{controller}/teamgym-sandbox-tests-{os.getpid()}"
            try:
                os.makedirs(path, exist_ok=True)
                for name, value in settings.items():
                    with open(os.path.join(path, name), "w") as fh:
                        fh.write(value)
                self.dirs.append(path)
            except OSError:
                continue

    @property
    def active(self) -> bool:
        return bool(self.dirs)

    def adopt(self, box: Sandbox) -> None:
        """Move every running server of ``box`` and its zygote (and so all its future jobs) into the guard
        cgroups (jobs then join their own memory cgroup below the server's, inside the guard's)."""
        zygotes = [s.zygote_pid for s in box._servers if s is not None and s.zygote_pid]
        for pid in server_pids(box) + zygotes:
            for path in self.dirs:
                with open(os.path.join(path, "cgroup.procs"), "w") as fh:
                    fh.write(str(pid))

    def remove(self) -> None:
        for path in self.dirs:
            for _ in range(50):
                try:
                    os.rmdir(path)
                    break
                except OSError:
                    time.sleep(0.1)


def server_pids(box: Sandbox) -> list[int]:
    return [s.proc.pid for s in box._servers if s is not None and s.alive()]


def job_processes(box: Sandbox) -> list[int]:
    """Every live descendant of the pool's servers (jobs, their children, escaped daemons reparented to them)
    plus, as root, any process owned by a job uid. Not the zygotes, nor their spares: children of a server that
    are PID 1 of a namespace of their own and that no job is using (this is called between jobs)."""
    from teamgym.sandbox._server import JUDGE_UID_BASE, UID_BASE

    parents: dict[int, int] = {}
    uids: dict[int, int] = {}
    namespace_inits: set[int] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as fh:
                fields = dict(line.split(":", 1) for line in fh if ":" in line)
        except OSError:
            continue
        parents[int(entry)] = int(fields["PPid"])
        uids[int(entry)] = int(fields["Uid"].split()[0])
        if fields.get("NSpid", "").split()[-1:] == ["1"] and len(fields["NSpid"].split()) > 1:
            namespace_inits.add(int(entry))
    roots = set(server_pids(box))
    zygotes = {s.zygote_pid for s in box._servers if s is not None and s.zygote_pid}
    spares = {pid for pid in namespace_inits if parents[pid] in roots}
    found = []
    for pid, ppid in parents.items():
        seen, cur = 0, ppid
        while cur and cur not in roots and seen < 64:
            cur, seen = parents.get(cur, 0), seen + 1
        job_uids = {UID_BASE + r for r in roots} | {JUDGE_UID_BASE + r for r in roots}
        if pid in spares:
            continue
        if cur in roots and pid not in roots | zygotes or uids[pid] in job_uids:
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    found.append((pid, fh.read().replace(b"\0", b" ").decode(errors="replace")[:80]))
            except OSError:
                continue
    return found


def leftovers(box: Sandbox) -> tuple[list[int], list[str]]:
    """(processes, files) left by jobs: must both be empty between jobs."""
    files = []
    for server in box._servers:
        if server is not None:
            for dirpath, _, filenames in os.walk(server.base):
                files += [os.path.join(dirpath, f) for f in filenames]
    return job_processes(box), files


def wait_clean(box: Sandbox, within: float = 2.0) -> tuple[list[int], list[str]]:
    deadline = time.monotonic() + within
    while True:
        left = leftovers(box)
        if not any(left) or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


@pytest.fixture(scope="session")
def guard() -> Iterator[OuterGuard]:
    outer = OuterGuard()
    yield outer
    outer.remove()


@pytest.fixture(scope="module")
def box(guard: OuterGuard) -> Iterator[Sandbox]:
    with Sandbox(workers=2) as sandbox:
        sandbox.run_many(["pass", "pass"] * 4)  # start both servers
        if guard.active:
            guard.adopt(sandbox)
        yield sandbox
