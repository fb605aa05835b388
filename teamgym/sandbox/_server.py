"""The warm fork server: a clean interpreter that forks one jailed child per job.

Started by :mod:`teamgym.sandbox.pool` as ``python -s _server.py SLOT WORKDIR_BASE HIDE_JSON`` with a scrubbed
environment. Stdlib only; never imports teamgym (the host may have torch and threads loaded, this process has
neither). Protocol on stdin/stdout: 4-byte big-endian length + UTF-8 JSON. The server first writes a hello
``{"isolation": {...}}``; then each request ``{"jobs": [...]}`` gets one reply ``{"results": [...]}`` in order.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import select
import signal
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _jail  # noqa: E402

del sys.path[0]

# Preloaded so forked jobs get them for free (copy-on-write); the usual imports of contest and HumanEval code.
import bisect, collections, copy, fractions, functools, heapq, itertools, math, re, string, typing  # noqa: E401,E402,F401,I001

# As root, each server's jobs run as uid/gid UID_BASE + the server's pid: unique on the machine while the
# server lives, so a uid-wide kill never touches another pool's (or another user's) jobs.
UID_BASE = 1_500_000_000
_PR_SET_PDEATHSIG, _PR_SET_CHILD_SUBREAPER = 1, 36
_READ = 65536


def _within(path: str, folder: str) -> bool:
    path, folder = os.path.abspath(path), os.path.abspath(folder)
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _recv(fd: int) -> dict | None:
    head = _read_exact(fd, 4)
    if head is None:
        return None
    body = _read_exact(fd, struct.unpack(">I", head)[0])
    return None if body is None else json.loads(body)


def _read_exact(fd: int, n: int) -> bytes | None:
    chunks, got = [], 0
    while got < n:
        chunk = os.read(fd, n - got)
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _send(fd: int, message: dict) -> None:
    body = json.dumps(message).encode()
    data = struct.pack(">I", len(body)) + body
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class Server:
    """Runs jobs one at a time, each in a freshly cloned, jailed child."""

    def __init__(self, base: str, hide: list[str]):
        self.root = os.geteuid() == 0
        self.uid = UID_BASE + os.getpid() if self.root else os.geteuid()
        self.gid = UID_BASE + os.getpid() if self.root else os.getegid()
        self.base = base
        self.workdir = os.path.join(base, "job")
        os.mkdir(self.workdir, 0o700)
        os.chmod(base, 0o711)
        # The interpreter and its libraries stay visible even inside a hidden folder (pyenv lives in /root).
        needed = sorted({os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, *sys.path) if p})
        needed = [p for p in needed if os.path.isdir(p) and not any(_within(p, q) and p != q for q in needed)]
        self.hide = [(p, [n for n in needed if _within(n, p)]) for p in hide
                     if os.path.isdir(p) and not _within(base, p) and not any(_within(p, n) for n in needed)]
        if self.root:
            self._kill_uid()  # jobs orphaned by a dead server that had our pid
        self.flags, self.warning = self._probe()

    def _cfg(self, flags: int) -> dict:
        return {"flags": flags, "workdir": self.workdir, "uid": self.uid, "gid": self.gid,
                "drop_uid": self.root, "hide": self.hide}

    def _probe(self) -> tuple[int, str | None]:
        """Find the strongest isolation this kernel grants us: server namespaces, then per-job clone flags."""
        errors = _jail.setup_server(self._cfg(0)) if os.uname().machine == "x86_64" else ["not x86_64"]
        self.server_ns = not errors
        job = {"timeout": 1, "memory_mb": 256, "file_mb": 1, "max_processes": 64, "max_open_files": 64,
               "disk_mb": 1}
        full = _jail.CLONE_NEWPID | _jail.CLONE_NEWNS | _jail.CLONE_NEWIPC
        for flags in ((full, _jail.CLONE_NEWPID, 0) if self.server_ns else (0,)):
            try:
                pid = _jail.clone(flags)
            except OSError as exc:
                errors.append(str(exc))
                continue
            if pid == 0:
                code = 1
                try:
                    _jail.enter(self._cfg(flags), job)
                    code = 0 if (os.getpid() == 1) == bool(flags & _jail.CLONE_NEWPID) else 2
                finally:
                    os._exit(code)
            _, status = os.waitpid(pid, 0)
            if status == 0:
                warning = None
                if flags != full or errors:
                    warning = ("the kernel refused namespaces (" + "; ".join(errors or ["jail setup failed"]) +
                               f"): server namespaces {self.server_ns}, per-job clone flags 0x{flags:x}; "
                               "see docs/sandbox.md for what is lost")
                return flags, warning
            errors.append(f"jail setup with clone flags 0x{flags:x} failed (exit status {status})")
        raise SystemExit("no isolation level works: " + "; ".join(errors))

    def isolation(self) -> dict:
        f = self.flags
        return {"pid_ns": bool(f & _jail.CLONE_NEWPID), "mount_ns": self.server_ns and bool(f & _jail.CLONE_NEWNS),
                "net_ns": self.server_ns, "user_ns": self.server_ns and not self.root,
                "uid_drop": self.root, "warning": self.warning}

    def run(self, job: dict) -> dict:
        try:
            return self._run(job)
        except OSError as exc:  # fork EAGAIN, pipe/fd exhaustion: the sandbox's failure, not the program's
            return {"status": "error", "stdout": "", "stderr": "", "returncode": None, "duration": 0.0,
                    "infra_error": f"sandbox could not run the job: {exc}"}

    def _run(self, job: dict) -> dict:
        stdin_fd = os.memfd_create("stdin", 0)
        os.write(stdin_fd, job["stdin"].encode("utf-8", "surrogateescape"))
        os.lseek(stdin_fd, 0, os.SEEK_SET)
        pipes = [os.pipe() for _ in range(3)]  # stdout, stderr, info
        isolated_dir = bool(self.flags & _jail.CLONE_NEWNS)
        if not isolated_dir:
            if not os.path.isdir(self.workdir):
                os.mkdir(self.workdir, 0o700)
            if self.root:
                os.chown(self.workdir, self.uid, self.gid)
        start = time.monotonic()
        pid = _jail.clone(self.flags)
        if pid == 0:
            code = 125
            try:
                _jail.enter(self._cfg(self.flags), job)
                _jail.wire_fds(stdin_fd, pipes[0][1], pipes[1][1], pipes[2][1])
                code = _jail.run(job)
            finally:
                os._exit(code)
        os.close(stdin_fd)
        for _, w in pipes:
            os.close(w)
        try:
            result = self._supervise(pid, job, [r for r, _ in pipes], start)
        finally:
            for r, _ in pipes:
                os.close(r)
            self._sweep(pid)
        return result

    def _supervise(self, pid: int, job: dict, fds: list[int], start: float) -> dict:
        pidfd = os.pidfd_open(pid)
        limit = int(job["output_limit"])
        bufs: dict[int, list[bytes]] = {fd: [] for fd in fds}
        sizes = dict.fromkeys(fds, 0)
        poller = select.poll()
        for fd in fds + [pidfd]:
            poller.register(fd, select.POLLIN)
        open_fds, exited, verdict = set(fds), None, None
        deadline = start + float(job["timeout"])
        grace_end = None
        while open_fds or exited is None:
            now = time.monotonic()
            if exited is None and now >= deadline:
                verdict = verdict or "timeout"
                self._kill(pid)
            if exited is not None:
                grace_end = grace_end or now + 0.2  # escaped writers (degraded mode) get 200 ms, then are cut
                if now >= grace_end:
                    break
            wait_until = grace_end if exited is not None else deadline
            for fd, _ in poller.poll(max(0.0, wait_until - now) * 1000 + 1):
                if fd == pidfd:
                    _, status = os.waitpid(pid, 0)
                    exited = status
                    poller.unregister(pidfd)
                    continue
                chunk = os.read(fd, _READ)
                if not chunk:
                    poller.unregister(fd)
                    open_fds.discard(fd)
                    continue
                room = (limit if fd != fds[2] else 1 << 22) - sizes[fd]
                if len(chunk) > room:
                    chunk = chunk[:max(room, 0)]
                    verdict = verdict or "output_limit"
                    self._kill(pid)
                bufs[fd].append(chunk)
                sizes[fd] += len(chunk)
        duration = time.monotonic() - start
        os.close(pidfd)
        status = exited if exited is not None else self._reap(pid)
        out, err, info = (b"".join(bufs[fd]) for fd in fds)
        return self._result(job, status, verdict, out, err, info, duration)

    def _reap(self, pid: int) -> int:
        self._kill(pid)
        return os.waitpid(pid, 0)[1]

    def _kill(self, pid: int) -> None:
        for target, how in ((pid, os.kill), (pid, os.killpg)):
            try:
                how(target, signal.SIGKILL)
            except OSError:
                pass

    def _sweep(self, pid: int) -> None:
        """Kill what escaped the job (only possible without a PID namespace) and reap every orphan."""
        if not self.flags & _jail.CLONE_NEWPID:
            self._kill(pid)
            if self.root:
                self._kill_uid()
            import shutil

            shutil.rmtree(self.workdir, ignore_errors=True)
        while True:
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                break

    def _kill_uid(self) -> None:
        """Kill every process of this server's job uid (all are its jobs'): kill(-1) run as that uid."""
        killer = os.fork()
        if killer == 0:
            try:
                os.setresuid(self.uid, self.uid, self.uid)
                for _ in range(3):
                    try:
                        os.kill(-1, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            finally:
                os._exit(0)
        os.waitpid(killer, 0)

    def _result(self, job: dict, status: int, verdict: str | None, out: bytes, err: bytes, info: bytes,
                duration: float) -> dict:
        records = []
        for line in info.splitlines():
            try:
                records.append(json.loads(line))
            except ValueError:
                continue
        returncode = os.waitstatus_to_exitcode(status)
        memory = any(r.get("memory") is True for r in records if isinstance(r, dict))
        if verdict is None:
            if returncode == 0:
                verdict = "ok"
            elif returncode == -signal.SIGXCPU:
                verdict = "timeout"
            elif memory:
                verdict = "memory"
            elif returncode < 0:
                verdict = "killed"
            elif returncode == 125 and not out and not err:
                return {"status": "error", "stdout": "", "stderr": "", "returncode": returncode,
                        "duration": duration, "infra_error": "the job's jail could not be set up"}
            else:
                verdict = "error"
        return {"status": verdict, "stdout": out.decode("utf-8", "replace"), "stderr": err.decode("utf-8", "replace"),
                "returncode": returncode, "duration": duration, "infra_error": None,
                "records": records if job.get("tests") is not None else None}


def main() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # die with the host
    libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # orphans of degraded-mode jobs come back to be reaped
    base, hide = sys.argv[2], json.loads(sys.argv[3])  # argv[1], the slot, only names the process
    control_in, control_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    for fd in (control_in, control_out):
        os.set_inheritable(fd, False)
    server = Server(base, hide)
    _send(control_out, {"isolation": server.isolation(), "pid": os.getpid()})
    while True:
        try:
            request = _recv(control_in)
        except OSError as exc:
            if exc.errno == errno.EINTR:
                continue
            raise
        if request is None:
            return
        _send(control_out, {"results": [server.run(job) for job in request["jobs"]]})


if __name__ == "__main__":
    main()
