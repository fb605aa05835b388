"""Inside the fork server: isolation, entered once by the server and once per job, and the job runner.

This module runs in the warm server interpreter (stdlib only, never imports teamgym). At start the server
calls :func:`setup_server` (its own mount + network namespace, plus a user namespace when not root). Per job
it calls :func:`clone` into new PID/mount/IPC namespaces; the child (PID 1 of its namespace, so every process
it creates dies with it) calls :func:`enter`, :func:`wire_fds` and :func:`run`, and never returns.
"""

from __future__ import annotations

import builtins
import ctypes
import io
import json
import linecache
import os
import resource
import signal
import sys
import traceback
import types

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
_SIGCHLD = 17
_SYS_CLONE = 56  # x86_64; other architectures fall back to plain fork (see probe in _server)
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 32, 4096, 16384, 1 << 18
_MS_NOATIME, _MS_NODIRATIME, _MS_RELATIME = 1024, 2048, 1 << 21
_ST_RELATIME = 4096
_PR_SET_NO_NEW_PRIVS, _PR_SET_DUMPABLE, _PR_SET_PDEATHSIG = 38, 4, 1

_libc = ctypes.CDLL(None, use_errno=True)
_libc_gil = ctypes.PyDLL(None, use_errno=True)  # holds the GIL across clone(), like os.fork does
_libc_gil.syscall.restype = ctypes.c_long
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]

INFO_FD = 3  # in the child: the side channel for assert-test values and the memory flag


def clone(flags: int) -> int:
    """``fork()`` into new namespaces: returns 0 in the child, the child's pid in the parent."""
    if not flags:
        return os.fork()
    api = ctypes.pythonapi
    api.PyOS_BeforeFork()
    pid = _libc_gil.syscall(_SYS_CLONE, ctypes.c_ulong(flags | _SIGCHLD), None, None, None, ctypes.c_ulong(0))
    err = ctypes.get_errno()
    if pid == 0:
        api.PyOS_AfterFork_Child()
        return 0
    api.PyOS_AfterFork_Parent()
    if pid < 0:
        raise OSError(err, f"clone(0x{flags:x}): {os.strerror(err)}")
    return pid


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(src: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = os.fsencode
    ret = _libc.mount(
        enc(src) if src else None, enc(target), enc(fstype) if fstype else None, flags, enc(data) if data else None
    )
    _check(ret, f"mount {target}")


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def read_mountpoints() -> list[str]:
    """Every mount point of the server's mount namespace, parents before children (from mountinfo)."""
    points = []
    with open("/proc/self/mountinfo", "rb") as fh:
        for line in fh:
            raw = line.split(b" ")[4].decode("utf-8", "surrogateescape")
            points.append(raw.encode("latin-1", "surrogateescape").decode("unicode_escape", "surrogateescape"))
    return sorted(set(points), key=lambda p: (p.count("/"), p))


def _remount_readonly(point: str) -> None:
    try:
        st = os.statvfs(point)
    except OSError:
        return
    # A remount must keep the flags that are locked in a user namespace (nosuid, nodev, noexec, atime).
    keep = st.f_flag & (_MS_NOSUID | _MS_NODEV | _MS_NOEXEC | _MS_NOATIME | _MS_NODIRATIME)
    if st.f_flag & _ST_RELATIME:
        keep |= _MS_RELATIME
    try:
        _mount(None, point, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | keep)
    except OSError:
        if point in ("/", "/tmp", "/var/tmp", "/dev/shm", "/home", "/root"):
            raise


def _hide(hidden: str, keep: list[str]) -> None:
    """Mount an empty read-only tmpfs on ``hidden``, binding back the ``keep`` folders inside it (the Python)."""
    handles = [os.open(path, os.O_PATH | os.O_DIRECTORY) for path in keep]
    _mount("tmpfs", hidden, "tmpfs", _MS_NOSUID | _MS_NODEV, "size=64k,mode=0755")
    for path, handle in zip(keep, handles):
        os.makedirs(path, exist_ok=True)
        _mount(f"/proc/self/fd/{handle}", path, None, _MS_BIND | _MS_REC)
        _remount_readonly(path)
        os.close(handle)
    _remount_readonly(hidden)


def setup_server(cfg: dict) -> list[str]:
    """Put the server itself into a private mount (and network) namespace, built once and shared by its jobs.

    Everything becomes read-only, the hidden folders empty, and the network is an empty namespace whose
    loopback is down. Each job clones a copy of this mount table, so per-job cost is one tmpfs mount.
    Returns the errors met; an empty list means full isolation.
    """
    errors: list[str] = []
    uid, gid = os.geteuid(), os.getegid()
    user = 0 if uid == 0 else CLONE_NEWUSER
    if _libc.unshare(user | CLONE_NEWNS | CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        return [f"unshare(mount, net{', user' if user else ''}): {os.strerror(err)}"]
    if user:
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
    workdir = cfg["workdir"]
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
    _mount(workdir, workdir, None, _MS_BIND)  # stays writable for the degraded (no per-job mount ns) mode
    for hidden, keep in cfg["hide"]:
        _hide(hidden, keep)
    for point in read_mountpoints():
        if not point.startswith("/proc") and point != workdir and not any(
            point == p or point.startswith(p.rstrip("/") + "/") for p, _ in cfg["hide"]
        ):
            _remount_readonly(point)
    return errors


def enter(cfg: dict, job: dict) -> None:
    """Jail the calling (freshly cloned) process. Raises OSError if a required step fails."""
    flags, workdir = cfg["flags"], cfg["workdir"]
    if flags & CLONE_NEWNS:
        uid, gid = cfg["uid"], cfg["gid"]
        disk = f"size={int(job['disk_mb'])}m,nr_inodes=4096,mode=0700,uid={uid},gid={gid}"
        _mount("tmpfs", workdir, "tmpfs", _MS_NOSUID | _MS_NODEV, disk)
        if flags & CLONE_NEWPID:  # a /proc of our own PID namespace: host processes become invisible
            _mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    os.setsid()
    os.chdir(workdir)
    _set_limits(job)
    if cfg["drop_uid"]:
        os.setgroups([])
        os.setresgid(cfg["gid"], cfg["gid"], cfg["gid"])
        os.setresuid(cfg["uid"], cfg["uid"], cfg["uid"])
    _drop_capabilities()
    # Die with the server (set after the uid change, which clears it). The startup sweep covers the race.
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    os.environ.clear()
    os.environ.update({"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": workdir, "TMPDIR": workdir,
                       "LANG": "C.UTF-8", "PYTHONHASHSEED": "0", "PYTHONIOENCODING": "utf-8"})


def _set_limits(job: dict) -> None:
    mb = 1024 * 1024
    cpu = int(job["timeout"]) + 2
    for res, value in (
        (resource.RLIMIT_CPU, cpu),
        (resource.RLIMIT_AS, int(job["memory_mb"]) * mb),
        (resource.RLIMIT_FSIZE, int(job["file_mb"]) * mb),
        (resource.RLIMIT_NPROC, int(job["max_processes"])),
        (resource.RLIMIT_NOFILE, int(job["max_open_files"])),
        (resource.RLIMIT_CORE, 0),
    ):
        resource.setrlimit(res, (value, value))


def _drop_capabilities() -> None:
    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    header, data = Header(0x20080522, 0), (Data * 2)()
    _check(_libc.capset(ctypes.byref(header), ctypes.byref(data)), "capset")
    _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")
    _libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)


def wire_fds(stdin_fd: int, out_w: int, err_w: int, info_w: int) -> None:
    """Make fds 0-3 the job's stdin/stdout/stderr/info channel and close everything else."""
    for target, fd in ((0, stdin_fd), (1, out_w), (2, err_w), (INFO_FD, info_w)):
        if fd != target:
            os.dup2(fd, target)
    os.closerange(INFO_FD + 1, 1 << 16)
    sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding="utf-8",
                                 errors="surrogateescape")
    sys.stdout = io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "w", closefd=False)), encoding="utf-8",
                                  errors="strict")
    sys.stderr = io.TextIOWrapper(io.BufferedWriter(io.FileIO(2, "w", closefd=False)), encoding="utf-8",
                                  errors="backslashreplace", line_buffering=True)
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr


def run(job: dict) -> int:
    """Run the job's program (and, in assert mode, its tests); returns the process exit code."""
    write, dumps = os.write, json.dumps  # kept before the program can monkeypatch os or json
    streams = (sys.stdout, sys.stderr)
    pristine = dict(builtins.__dict__)
    module = types.ModuleType("__main__")
    module.__file__ = "solution.py"
    sys.modules["__main__"] = module
    sys.argv = ["solution.py"]
    code = job["code"]
    linecache.cache["solution.py"] = (len(code), None, code.splitlines(True), "solution.py")
    exit_code = 0

    def report(record: dict) -> None:
        try:
            write(INFO_FD, (dumps(record) + "\n").encode())
        except OSError:
            pass

    try:
        exec(compile(code, "solution.py", "exec"), module.__dict__)
    except SystemExit as exc:
        exit_code = _exit_code(exc)
        if job.get("tests") is not None:
            report({"program": "exit", "error": f"the program exited (SystemExit({exc.code!r})) before the tests"})
            exit_code = exit_code or 1
    except MemoryError as exc:
        report({"memory": True})
        _print_exception(exc)
        exit_code = 1
    except BaseException as exc:  # the program's own error: shown to it as Python would
        _print_exception(exc)
        exit_code = 1
    else:
        if job.get("tests") is not None:
            report({"program": "ok"})
            _run_tests(job, module.__dict__, pristine, report)
    for stream in streams + (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: B036 - a closed or hijacked stream must not stop the exit
            pass
    return exit_code


def _print_exception(exc: BaseException) -> None:
    """Print the traceback without the sandbox's own frame, as ``python solution.py`` would."""
    try:
        traceback.print_exception(type(exc), exc, exc.__traceback__.tb_next if exc.__traceback__ else None)
    except BaseException:  # noqa: B036 - hostile exception objects or a closed stderr
        pass


def _exit_code(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code & 0xFF
    try:
        print(exc.code, file=sys.stderr)
    except BaseException:  # noqa: B036
        pass
    return 1


class _TestTimeout(BaseException):
    pass


def _alarm(signum: int, frame: object) -> None:
    raise _TestTimeout


def _run_tests(job: dict, namespace: dict, pristine: dict, report) -> None:
    """Evaluate each test in a copy of the program's globals with the builtins as they were before it ran."""
    setitimer, set_handler, timer = signal.setitimer, signal.signal, signal.ITIMER_REAL
    if job.get("entry_point"):
        namespace["candidate"] = namespace.get(job["entry_point"])
    base = dict(namespace)
    base["__builtins__"] = pristine
    try:
        exec(compile(job.get("setup") or "", "test_setup", "exec"), base)
    except BaseException as exc:  # noqa: B036 - a broken setup fails every test, it does not crash the runner
        for index in range(len(job["tests"])):
            report({"i": index, "status": "error", "error": "test setup failed: " + _describe(exc)})
        return
    for index, test in enumerate(job["tests"]):
        scope = dict(base)
        scope["__builtins__"] = dict(pristine)
        set_handler(signal.SIGALRM, _alarm)
        setitimer(timer, float(job["test_timeout"]))
        try:
            if test["kind"] == "value":
                value = eval(compile(test["expr"], f"test_{index}", "eval"), scope)
                setitimer(timer, 0)
                report({"i": index, "value": encode_value(value)})
            else:
                exec(compile(test["code"], f"test_{index}", "exec"), scope)
                setitimer(timer, 0)
                report({"i": index, "ok": True})
        except _TestTimeout:
            report({"i": index, "status": "timeout", "error": "the test ran past its time budget"})
        except MemoryError:
            setitimer(timer, 0)
            report({"i": index, "status": "memory", "error": "MemoryError"})
        except BaseException as exc:  # noqa: B036 - SystemExit inside a test fails that test, nothing more
            setitimer(timer, 0)
            report({"i": index, "status": "error", "error": _describe(exc)})


def _describe(exc: BaseException) -> str:
    try:
        return f"{type(exc).__name__}: {exc}"[:2000]
    except BaseException:  # noqa: B036 - a hostile __str__
        return "an exception whose message could not be read"


class _Unencodable(Exception):
    pass


def encode_value(value: object, depth: int = 0) -> object:
    """Tag a plain value (exact builtin types only) as JSON so the host rebuilds and compares it itself."""
    if depth > 64:
        raise _Unencodable("nested deeper than 64 levels")
    kind = type(value)
    if value is None or kind in (bool, str):
        return value
    if kind is int:
        return {"int": str(value)} if abs(value) > 2**53 else value
    if kind is float:
        return {"float": repr(value)}
    if kind in (list, tuple, set, frozenset):
        items = [encode_value(v, depth + 1) for v in value]
        return {kind.__name__: items}
    if kind is dict:
        return {"dict": [[encode_value(k, depth + 1), encode_value(v, depth + 1)] for k, v in value.items()]}
    if kind is bytes:
        return {"bytes": value.hex()}
    if kind is complex:
        return {"complex": [repr(value.real), repr(value.imag)]}
    raise _Unencodable(f"a {kind.__name__!s} (only plain builtin values can be compared)")
