"""Supervising the processes of one job: their pipes, their output caps, the deadline, how each ended (stdlib only)."""

from __future__ import annotations

import os
import select
import signal
import time

import _caller
import _jail

_READ = 65536
#: Seconds a job's processes may take to come up (the jail's READY byte) before the job is an infrastructure error.
#: The job's own clock starts only when every process is ready: an overloaded host delays the jail, not the job.
SETUP_SECONDS = 5.0
#: Seconds a program served by the server's calls has to exit once they are over (it sees their channel close and
#: returns); past it, it is killed as done: a top level that never ends costs one test's budget, not the job's.
DONE_GRACE = 0.25


class Proc:
    """One job process as the server supervises it: its pipes, what came out of them, how it ended."""

    def __init__(self, role: str, pid: int, pipes: dict[str, int], limits: dict[str, int]):
        self.role, self.pid, self.pipes, self.limits = role, pid, pipes, limits
        self.pidfd = os.pidfd_open(pid)
        self.bufs: dict[str, list[bytes]] = {name: [] for name in pipes}
        self.sizes = dict.fromkeys(pipes, 0)
        self.status: int | None = None  # wait status once exited
        self.verdict: str | None = None  # our reason for killing it
        self.grace_end: float | None = None

    def kill(self, verdict: str | None) -> None:
        self.verdict = self.verdict or verdict
        for how in (os.kill, os.killpg):
            try:
                how(self.pid, signal.SIGKILL)
            except OSError:
                pass

    def output(self, name: str) -> bytes:
        return b"".join(self.bufs[name])

    @property
    def ready(self) -> bool:
        return self.output("status").startswith(_jail.READY)


def supervise(procs: list[Proc], timeout: float, caller: _caller.Caller | None = None) -> None:
    """Collect output until the job is over: the program exits (plain job, or calls made by ``caller``) or the
    judge does (the program then serves until the judge is done).

    ``timeout`` seconds count from the moment every process is ready (its jail is up and its code about to run);
    until then the processes have :data:`SETUP_SECONDS`, after which they are killed unready (an infra error).
    """
    poller = select.poll()
    owner: dict[int, tuple[Proc, str | None]] = {}
    for proc in procs:
        owner[proc.pidfd] = (proc, None)
        for name, fd in proc.pipes.items():
            owner[fd] = (proc, name)
    for fd in owner:
        poller.register(fd, select.POLLIN)
    polled: set[int] = set()  # the caller's channels being polled
    if caller is not None:
        poller.register(caller.reply_fd, select.POLLIN)
        polled.add(caller.reply_fd)
    primary = procs[-1]
    open_fds = set(owner)
    started = False
    deadline = time.monotonic() + SETUP_SECONDS
    done_by = float("inf")  # when the caller's calls are over: the program's time to exit (DONE_GRACE)
    while True:
        now = time.monotonic()
        if not started and all(p.ready for p in procs):
            started, deadline = True, now + timeout
            if caller is not None:
                caller.begin(now)
        if now >= deadline:
            for proc in procs:
                if proc.status is None:
                    proc.kill("timeout" if started else "setup")
            deadline = float("inf")
        if caller is not None and not caller.closed:
            caller.on_time(now)
            if caller.done:  # the program sees the end of its calls and exits
                for fd in polled:
                    poller.unregister(fd)
                polled.clear()
                caller.close()
                done_by = now + DONE_GRACE
            elif bool(caller.outbox) != (caller.send_fd in polled):
                if caller.outbox:
                    poller.register(caller.send_fd, select.POLLOUT)
                    polled.add(caller.send_fd)
                else:
                    poller.unregister(caller.send_fd)
                    polled.discard(caller.send_fd)
        if now >= done_by:
            for proc in procs:
                if proc.status is None:
                    proc.kill("done")
            done_by = float("inf")
        if primary.status is not None:
            for proc in procs:
                if proc is not primary and proc.status is None:
                    proc.kill("done")
        live_pipes = [fd for fd in open_fds if owner[fd][1] is not None] + [
            fd for fd in polled if caller is not None and fd == caller.reply_fd
        ]
        if all(p.status is not None for p in procs):
            end = max(p.grace_end for p in procs)
            if not live_pipes or now >= end:
                return
        waits = [deadline, done_by] + [p.grace_end for p in procs if p.grace_end is not None]
        if caller is not None and not caller.closed:
            waits.append(caller.deadline)
        timeout_ms = max(0.0, min(waits) - now) * 1000 + 1
        for fd, _ in poller.poll(min(timeout_ms, 1e9)):
            if caller is not None and fd == caller.send_fd:
                caller.flush()
                continue
            if caller is not None and fd == caller.reply_fd:
                chunk = os.read(fd, _READ)
                if chunk:
                    caller.on_data(chunk)
                else:
                    poller.unregister(fd)
                    polled.discard(fd)
                    caller.on_eof()
                continue
            proc, name = owner[fd]
            if name is None:
                proc.status = os.waitpid(proc.pid, 0)[1]
                proc.grace_end = time.monotonic() + 0.2  # escaped writers (degraded mode) get 200 ms
                poller.unregister(fd)
                open_fds.discard(fd)
                continue
            chunk = os.read(fd, _READ)
            if not chunk:
                poller.unregister(fd)
                open_fds.discard(fd)
                continue
            room = proc.limits[name] - proc.sizes[name]
            if len(chunk) > room:
                chunk = chunk[: max(room, 0)]
                proc.kill("output_limit" if name != "status" else "error")
            proc.bufs[name].append(chunk)
            proc.sizes[name] += len(chunk)
