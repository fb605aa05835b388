"""The warm fork server: a clean interpreter that runs each job in freshly cloned, jailed processes.

Started by :mod:`teamgym.sandbox.pool` as ``python -s -S _server.py SLOT BASE NAMESPACES(0|1) PACKAGES_JSON``
with a scrubbed environment. Stdlib only; never imports teamgym (the host may have torch and threads loaded, this
process has neither) and never imports site-packages. Protocol on stdin/stdout: 4-byte big-endian length + UTF-8
JSON. The server first writes a hello ``{"isolation": {...}, "pid": ..., "zygote": ...}``; then each request
``{"jobs": [...]}`` gets one reply ``{"results": [...]}``, in order.

Three kinds of process, three levels of trust:

* the **server** (trusted) reads jobs, holds their code, tests and outputs, and supervises;
* its **zygote** (trusted, see :mod:`_zygote`), forked once at start before any job exists, clones every job process
  (as the server's child, ``CLONE_PARENT``). It never sees a job's data (the server hands a job's file descriptors
  to the job process itself), so a job, which can read all of its own memory, finds nothing of any other job there;
* **job processes** (hostile): the *program*, and for assert tests its *judge*, each in its own PID and IPC
  namespace, uid (as root), memory cgroup and seccomp filter (see :mod:`_jail`), inside the minimal root the
  server pivoted into (see :mod:`_root`). They talk only through pipes the server made; the server supervises them
  (see :mod:`_supervise`) and, for tests that are literal calls, calls the program itself (see :mod:`_caller`).
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import socket
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
import _caller  # noqa: E402
import _cgroup  # noqa: E402
import _jail  # noqa: E402
import _root  # noqa: E402
import _supervise  # noqa: E402
import _tidy  # noqa: E402
import _wire  # noqa: E402
import _zygote  # noqa: E402

sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]  # jobs import nothing from here

# Preloaded so job processes get them for free (copy-on-write): the usual imports of contest and HumanEval code.
import bisect, copy, fractions, functools, heapq, itertools, math, random, re, string, typing  # noqa: E401,E402,F401,I001

# As root, each server's programs run as uid/gid UID_BASE + the server's pid, its judges as JUDGE_UID_BASE + pid:
# unique on the machine while the server lives (pids stay below 2**22), so a uid-wide kill never touches another
# pool's (or another user's) jobs.
UID_BASE = 1_500_000_000
JUDGE_UID_BASE = UID_BASE + (1 << 22)
_PR_SET_PDEATHSIG, _PR_SET_CHILD_SUBREAPER, _PR_SET_DUMPABLE = 1, 36, 4
_READ = 65536
_STATUS_CAP = {"program": 1 << 16, "judge": 64 << 20}  # bytes of status records kept per process
_NOT_BLANK = re.compile(r"\S")
_LIMIT_KEYS = ("timeout", "memory_mb", "file_mb", "max_processes", "max_open_files")
_libc = ctypes.CDLL(None, use_errno=True)


class Server:
    """Runs jobs one at a time; see the module docstring."""

    def __init__(self, base: str, namespaces: bool = True, packages: list[str] | None = None):
        self.base = base
        self.root_user = os.geteuid() == 0
        pid = os.getpid()
        self.ids = {
            "program": (UID_BASE + pid, UID_BASE + pid) if self.root_user else (os.geteuid(), os.getegid()),
            "judge": (JUDGE_UID_BASE + pid, JUDGE_UID_BASE + pid) if self.root_user else (os.geteuid(), os.getegid()),
        }
        self.disk_mb = 64
        if self.root_user:
            self._kill_uids()  # jobs orphaned by a dead server that had our pid
        errors: list[str] = []
        self.cgroups, why = _cgroup.create() if namespaces else (None, None)
        if why:
            errors.append(why)
        self.server_ns = False
        if not namespaces:
            errors.append("namespaces turned off by the caller")
        elif not _jail.can_clone():
            errors.append(f"clone() with namespaces is not wired for {os.uname().machine}")
        else:
            try:
                setup = _root.setup_server(
                    os.path.join(base, "root"),
                    uid=self.ids["program"][0],
                    gid=self.ids["program"][1],
                    disk_mb=self.disk_mb,
                    packages=list(packages or []),
                )
                errors += setup
                self.server_ns = not setup
            except OSError as exc:  # half set up: keep what worked, run jobs without the new root
                errors.append(f"the server's namespaces or new root could not be set up: {exc}")
        self.workdir = _root.JOB_DIR if self.server_ns else os.path.join(base, "job")
        if packages and self.server_ns:  # where jobs import them from
            sys.path.append(_root.PACKAGES_DIR)
        for folder in sorted({os.path.dirname(p) for p in packages or []} if not self.server_ns else ()):
            if folder not in sys.path:
                sys.path.append(folder)
        procs = {role: self.cgroups.procs_fd(role) for role in _cgroup.ROLES} if self.cgroups else {}
        self.zygote = _zygote.Zygote(procs, self.workdir) if _jail.can_clone() else None
        for fd in procs.values():  # the zygote holds them; a server without one forks children itself (no cgroups)
            os.close(fd)
        self.config = {
            "flags": _jail.CLONE_NEWPID | _jail.CLONE_NEWIPC if self.server_ns else 0,
            "seccomp": self.server_ns and _jail.seccomp_supported(),
            "cgroup": self.cgroups is not None and self.zygote is not None,
        }
        self.warning = self._probe(errors)

    # ------------------------------------------------------------------------------------------ isolation
    def _probe(self, errors: list[str]) -> str | None:
        """Run a trivial job with the strongest settings, relaxing one at a time until one works."""
        relaxations = [("cgroup", False), ("seccomp", False), ("flags", _jail.CLONE_NEWPID), ("flags", 0)]
        while True:
            result = self._run(
                {
                    "code": "import os\nprint(os.getpid())",
                    "stdin": "",
                    "timeout": 5,
                    "memory_mb": 256,
                    "file_mb": 1,
                    "max_processes": 64,
                    "max_open_files": 64,
                    "disk_mb": 1,
                    "output_limit": 1000,
                }
            )
            pid_ns = bool(self.config["flags"] & _jail.CLONE_NEWPID)
            if result["status"] == "ok" and (result["stdout"].strip() == "1") == pid_ns:
                break
            errors.append(
                f"a job with {self.config} failed: {result['infra_error'] or result['status']} "
                f"{result['stderr'][-300:]!r}"
            )
            while relaxations:
                key, value = relaxations.pop(0)
                if self.config[key] != value and (key != "flags" or self.config[key] > value):
                    self.config[key] = value
                    if self.zygote is not None:
                        self.zygote.discard()
                    break
            else:
                raise SystemExit("no isolation level works: " + "; ".join(errors))
        if not errors:
            return None
        return "; ".join(errors) + f"; running with {self.config}: see docs/sandbox.md for what is lost"

    def isolation(self) -> dict:
        config = self.config
        return {
            "pid_ns": bool(config["flags"] & _jail.CLONE_NEWPID),
            "mount_ns": self.server_ns,
            "net_ns": self.server_ns,
            "new_root": self.server_ns,
            "user_ns": self.server_ns and not self.root_user,
            "uid_drop": self.root_user,
            "seccomp": bool(config["seccomp"]),
            "memory_cgroup": self.cgroups.version if config["cgroup"] else None,
            "zygote": self.zygote is not None,
            "warning": self.warning,
        }

    # ------------------------------------------------------------------------------------------ jobs
    def run(self, job: dict) -> dict:
        try:
            return self._run(job)
        except OSError as exc:  # fork EAGAIN, pipe/fd exhaustion: the sandbox's failure, not the program's
            return _infra(f"sandbox could not run the job: {exc}")

    def _run(self, job: dict) -> dict:
        tests = job.get("tests")
        limits = {k: job[k] for k in _LIMIT_KEYS}
        if self.server_ns and int(job["disk_mb"]) != self.disk_mb:
            _root.resize_workdir(*self.ids["program"], int(job["disk_mb"]))
            self.disk_mb = int(job["disk_mb"])
        elif not self.server_ns:
            os.makedirs(self.workdir, 0o700, exist_ok=True)
            if self.root_user:
                os.chown(self.workdir, *self.ids["program"])
        roles = ("program", "judge") if tests is not None else ("program",)
        oom_before = {}
        if self.config["cgroup"]:
            for role in roles:
                self.cgroups.set_limit(role, int(job["memory_mb"]))
                oom_before[role] = self.cgroups.oom_kills(role)
        start = time.monotonic()
        procs: list[_supervise.Proc] = []
        caller: _caller.Caller | None = None
        try:
            if tests is None:
                procs.append(self._spawn("program", {"code": job["code"]}, job["stdin"], limits, [], job))
            elif job.get("entry_point") and all(t["kind"] == "call" for t in tests):  # no test code to run
                calls, answers = os.pipe(), os.pipe()
                try:
                    spec = {"code": job["code"], "serve": True}
                    procs.append(self._spawn("program", spec, "", limits, [calls[0], answers[1]], job))
                finally:
                    os.close(calls[0])
                    os.close(answers[1])
                caller = _caller.Caller(calls[1], answers[0], job["entry_point"], tests, float(job["test_timeout"]))
            else:
                calls, answers = os.pipe(), os.pipe()  # judge -> program, program -> judge
                program_spec = {"code": job["code"], "serve": True}
                judge_spec = {
                    "tests": tests,
                    "entry_point": job.get("entry_point"),
                    "prelude": job.get("prelude") or "",
                    "setup": job.get("setup") or "",
                    "test_timeout": float(job["test_timeout"]),
                    "program_timeout": float(job["test_timeout"]),
                }
                try:
                    procs.append(self._spawn("program", program_spec, "", limits, [calls[0], answers[1]], job))
                    procs.append(self._spawn("judge", judge_spec, "", limits, [answers[0], calls[1]], job))
                finally:
                    for fd in (*calls, *answers):
                        os.close(fd)
            _supervise.supervise(procs, float(job["timeout"]), caller)
        finally:
            if caller is not None:
                caller.close()
            for proc in procs:
                proc.kill(None)
                if proc.status is None:
                    proc.status = os.waitpid(proc.pid, 0)[1]
                os.close(proc.pidfd)
                for fd in proc.pipes.values():
                    os.close(fd)
            self._sweep([p.pid for p in procs])
        duration = time.monotonic() - start
        oom = {role: self.cgroups.oom_kills(role) > oom_before[role] for role in oom_before}
        result = self._result(procs, oom, duration, len(tests or ()))
        if caller is not None and not result["infra_error"]:
            result["records"] = caller.records
        return result

    def _spawn(self, role: str, spec: dict, stdin: str, limits: dict, extra: list[int], job: dict) -> _supervise.Proc:
        """Start one jailed job process: fds 0-4 (stdin, stdout, stderr, status, spec), then ``extra``."""
        stdin_fd = _memfd("stdin", stdin.encode("utf-8", "surrogateescape"))
        spec_fd = _memfd("spec", json.dumps(spec).encode())
        pipes = [os.pipe() for _ in range(3)]  # stdout, stderr, status
        uid, gid = self.ids[role]
        prep = {
            "role": role,
            "flags": self.config["flags"],
            "cgroup": bool(self.config["cgroup"]),
            "jail": {
                "cwd": self.workdir if role == "program" or not self.server_ns else "/",
                "uid": uid,
                "gid": gid,
                "drop_uid": self.root_user,
                "seccomp": bool(self.config["seccomp"]),
            },
        }
        fds = [stdin_fd, pipes[0][1], pipes[1][1], pipes[2][1], spec_fd, *extra]
        try:
            pid = self._start(prep, {"limits": limits}, fds)
        except BaseException:
            for r, _ in pipes:
                os.close(r)
            raise
        finally:
            for fd in (stdin_fd, spec_fd, *(w for _, w in pipes)):
                os.close(fd)
        output_cap = int(job["output_limit"])
        return _supervise.Proc(
            role,
            pid,
            {"stdout": pipes[0][0], "stderr": pipes[1][0], "status": pipes[2][0]},
            {"stdout": output_cap, "stderr": output_cap, "status": _STATUS_CAP[role]},
        )

    def _start(self, prep: dict, job: dict, fds: list[int]) -> int:
        if self.zygote is not None:
            return self.zygote.spawn(prep, job, fds)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()  # no raw clone on this machine: the job is a fork of the server (documented)
        if pid == 0:
            code = 125
            try:
                ours.close()
                code = _zygote.spare_main(theirs, prep, {})
            finally:
                os._exit(code)
        theirs.close()
        socket.send_fds(ours, [json.dumps(job).encode()], fds)
        ours.close()
        return pid

    def _sweep(self, pids: list[int]) -> None:
        """Kill what escaped the job (only possible without a PID namespace) and empty the working directory."""
        if not self.config["flags"] & _jail.CLONE_NEWPID and self.root_user:
            # Escaped daemons come back to us (child subreaper) once killed; a SIGKILLed process turns into a
            # zombie a moment later, so kill and reap until none is left (bounded: nothing can stall us).
            for _ in range(200):
                self._kill_uids()
                self._reap_orphans()
                if not self._children_alive():
                    break
                time.sleep(0.005)
        _tidy.empty(self.workdir)  # every job process is dead by now
        self._reap_orphans()

    def _reap_orphans(self) -> None:
        """Reap every exited child (orphans of degraded-mode jobs come back to us)."""
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if self.zygote is not None and pid == self.zygote.pid:
                raise _zygote.ZygoteDied("the zygote exited")

    def _children_alive(self) -> bool:
        """Whether a child other than the zygote is alive (read from /proc, which degraded mode has)."""
        children: set[int] = set()
        try:
            for task in os.listdir("/proc/self/task"):
                with open(f"/proc/self/task/{task}/children") as fh:
                    children.update(int(pid) for pid in fh.read().split())
        except OSError:  # no /proc (a mount namespace without a PID one): the kill-and-reap pass must do
            return False
        if self.zygote is not None:
            children -= {self.zygote.pid} | self.zygote.spare_pids()
        return bool(children)

    def _kill_uids(self) -> None:
        """Kill every process of this server's job uids (all are its jobs'): kill(-1) run as each uid."""
        for uid, _ in {self.ids["program"], self.ids["judge"]}:
            killer = os.fork()
            if killer == 0:
                try:
                    os.setresuid(uid, uid, uid)
                    for _ in range(3):
                        try:
                            os.kill(-1, signal.SIGKILL)
                        except ProcessLookupError:
                            pass
                finally:
                    os._exit(0)
            os.waitpid(killer, 0)

    def _result(self, procs: list[_supervise.Proc], oom: dict[str, bool], duration: float, n_tests: int) -> dict:
        for proc in procs:
            if not proc.ready:  # the jail never came up: nothing of the job ran, so it cannot be its fault
                if proc.verdict == "setup":
                    why = f"the {proc.role}'s jail was not up after {_supervise.SETUP_SECONDS:g} s (host overloaded?)"
                    return _infra(why, duration)
                return _infra(f"the {proc.role}'s jail could not be set up", duration)
        program = procs[0]
        returncode = os.waitstatus_to_exitcode(program.status)
        records = program.output("status")[len(_jail.READY) :].splitlines()
        memory = oom.get("program", False) or any(line.strip() == b'{"memory": true}' for line in records)
        verdict = program.verdict
        if verdict == "done":  # it served until the judge was done: its end is ours
            verdict, returncode = "ok", 0
        if verdict is None:
            if memory:
                verdict = "memory"
            elif returncode == 0:
                verdict = "ok"
            elif returncode == -signal.SIGXCPU:
                verdict = "timeout"
            elif returncode < 0:
                verdict = "killed"
            else:
                verdict = "error"
        result = {
            "status": verdict,
            "stdout": program.output("stdout").decode("utf-8", "replace"),
            "stderr": program.output("stderr").decode("utf-8", "replace"),
            "returncode": returncode,
            "duration": duration,
            "infra_error": None,
            "records": None,
        }
        if len(procs) > 1:
            judge = procs[1]
            text = judge.output("status")[len(_jail.READY) :].decode("utf-8", "replace")
            # The judge writes a record or two per test; the tests' own code can write there too (it runs in the
            # judge): blank lines are skipped and the count is bounded, so that a flood of lines (up to the status
            # cap, 64 MiB) costs the host neither minutes of parsing nor gigabytes.
            result["records"] = _record_lines(text, 4 * n_tests + 16)
            result["judge_status"] = judge.verdict or ("ok" if judge.status == 0 else "error")
            if oom.get("judge"):
                result["judge_status"] = "memory"
        return result


def _record_lines(text: str, limit: int) -> list[str]:
    """The first ``limit`` lines of ``text`` that are not blank; runs of blank lines are skipped in C, not per line."""
    lines: list[str] = []
    pos = 0
    while len(lines) < limit:
        found = _NOT_BLANK.search(text, pos)
        if found is None:
            break
        start = text.rfind("\n", pos, found.start()) + 1 or pos
        end = text.find("\n", found.start())
        end = len(text) if end < 0 else end
        lines.append(text[start:end])
        pos = end + 1
    return lines


def _infra(reason: str, duration: float = 0.0) -> dict:
    return {
        "status": "error",
        "stdout": "",
        "stderr": "",
        "returncode": None,
        "duration": duration,
        "infra_error": reason,
        "records": None,
    }


def _memfd(name: str, data: bytes) -> int:
    fd = os.memfd_create(name, 0)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def main() -> None:
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # die with the host
    _libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # orphans of degraded-mode jobs come back to be reaped
    base = sys.argv[2]  # argv[1], the slot, only names the process
    namespaces = sys.argv[3] == "1"
    packages = json.loads(sys.argv[4]) if len(sys.argv) > 4 else []
    control_in, control_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    for fd in (control_in, control_out):
        os.set_inheritable(fd, False)
    import site

    site.setquit()  # exit() and quit() for programs, as python gives them (this process runs without site)
    site.setcopyright()
    site.sethelper()
    server = Server(base, namespaces, packages)
    _libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)  # after the uid_map writes: no same-uid ptrace of the server
    zygote = server.zygote.pid if server.zygote is not None else None
    _wire.write_frame(control_out, {"isolation": server.isolation(), "pid": os.getpid(), "zygote": zygote})
    reader = _wire.FrameReader(control_in, limit=1 << 31)
    try:
        while True:
            try:
                request = reader.read()
            except EOFError:
                return
            _wire.write_frame(control_out, {"results": [server.run(job) for job in request["jobs"]]})
    finally:
        if server.cgroups is not None:
            server.cgroups.close()


if __name__ == "__main__":
    main()
