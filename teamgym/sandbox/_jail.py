"""Jailing one freshly cloned job process (stdlib only).

A job process (a program, or the judge of its tests) is cloned by the server's zygote straight into new PID and
IPC namespaces (it is PID 1 there: every process it makes dies with it), with the server as its parent. Before it
is given a job it joins its memory cgroup and calls :func:`enter`: ``setsid``, its working directory, its
unprivileged uid (when the server is root), no capability, ``no_new_privs`` and ``PDEATHSIG``, a scrubbed
environment and a seccomp filter (x86_64) that refuses the system calls a job never needs and that could hold
memory outside its limits or widen its view: ``memfd_create``, System V shared memory and message queues, POSIX
message queues, new namespaces (``unshare``, ``setns``, ``clone`` with namespace flags; ``clone3`` reports ENOSYS
so libc falls back to ``clone``), mounts, ``ptrace``, ``bpf``, ``perf_event_open``, ``userfaultfd``, ``io_uring``,
kernel keyrings. With its job come its file descriptors (:func:`wire_fds`) and its rlimits (:func:`set_limits`).
"""

from __future__ import annotations

import ctypes
import fcntl
import io
import os
import resource
import signal
import struct
import sys

CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
CLONE_PARENT = 0x00008000
_NAMESPACE_FLAGS = 0x7E020080  # NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET | NEWTIME
_SIGCHLD = 17
_SYS_CLONE = {"x86_64": 56, "aarch64": 220}  # all-zero pointer arguments: their order does not matter
_PR_SET_NO_NEW_PRIVS, _PR_SET_PDEATHSIG, _PR_SET_SECCOMP = 38, 1, 22
_SECCOMP_MODE_FILTER = 2

_libc = ctypes.CDLL(None, use_errno=True)
_libc_gil = ctypes.PyDLL(None, use_errno=True)  # holds the GIL across clone(), like os.fork does
_libc_gil.syscall.restype = ctypes.c_long
_MACHINE = os.uname().machine
# Resolved and typed once here (in the server), so a job process only calls them: each lookup or conversion a job
# process makes writes pages it shares with the zygote, and every such page is copied for it.
_syscall = _libc_gil["syscall"]
_syscall.restype = ctypes.c_long
_syscall.argtypes = [ctypes.c_long, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_ulong]
_prctl = _libc["prctl"]
_prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
_capset = _libc["capset"]
_capset.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
_before_fork = ctypes.pythonapi.PyOS_BeforeFork
_after_fork_child = ctypes.pythonapi.PyOS_AfterFork_Child
_after_fork_parent = ctypes.pythonapi.PyOS_AfterFork_Parent

STATUS_FD = 3  # in every job process: the ready byte, then its records (one JSON object per line)
SPEC_FD = 4  # what the process is to do (JSON), read and closed before any job code runs
READY = b"R"  # written on STATUS_FD once the jail is up: any failure after it is the job's own


def can_clone() -> bool:
    """Whether :func:`clone` can make a sibling (``CLONE_PARENT``) in new namespaces on this machine."""
    return _MACHINE in _SYS_CLONE


def clone(flags: int) -> int:
    """``clone()`` (no new stack: fork semantics): 0 in the child, the child's pid in the caller.

    Raises:
        OSError: the kernel refused (EAGAIN, EPERM for namespaces...).
    """
    _before_fork()
    pid = _syscall(_SYS_CLONE[_MACHINE], flags | _SIGCHLD, None, None, None, 0)
    if pid == 0:
        _after_fork_child()
        return 0
    err = ctypes.get_errno()
    _after_fork_parent()
    if pid < 0:
        raise OSError(err, f"clone(0x{flags:x}): {os.strerror(err)}")
    return pid


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def wire_fds(fds: list[int]) -> None:
    """Make ``fds`` the process's fds 0, 1, 2, ... in order and close every other one."""
    above = max(len(fds), max(fds, default=0) + 1)  # copies up there: no dup2 below overwrites a source
    copies = [fcntl.fcntl(fd, fcntl.F_DUPFD, above) for fd in fds]
    for target, fd in enumerate(copies):
        os.dup2(fd, target)
    os.closerange(len(fds), 1 << 16)


def _streams() -> tuple[io.TextIOWrapper, io.TextIOWrapper, io.TextIOWrapper]:
    return (
        io.TextIOWrapper(
            io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding="utf-8", errors="surrogateescape"
        ),
        io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "w", closefd=False)), encoding="utf-8"),
        io.TextIOWrapper(
            io.BufferedWriter(io.FileIO(2, "w", closefd=False)),
            encoding="utf-8",
            errors="backslashreplace",
            line_buffering=True,
        ),
    )


# Made once in the server (never written to there), so each job process only points sys at them.
_STREAMS = _streams()


def python_streams() -> None:
    """Make ``sys.stdin/stdout/stderr`` UTF-8 text streams on fds 0-2, as ``python`` would.

    The zygote does it once (it never reads or writes them), so its clones start with them; swapping them in each job
    process also dropped the server's own streams there, whose finalisation copied some fifty pages per job."""
    if sys.stdin is _STREAMS[0] and sys.__stdin__ is _STREAMS[0] and sys.stdout is _STREAMS[1] and (
        sys.__stdout__ is _STREAMS[1] and sys.stderr is _STREAMS[2] and sys.__stderr__ is _STREAMS[2]
    ):
        return
    sys.stdin, sys.stdout, sys.stderr = _STREAMS
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = _STREAMS


_scrubbed_for: str | None = None  # the cwd whose job environment this process holds (None: not scrubbed)


def scrub_environ(cwd: str) -> None:
    """Make the environment (``os.environ`` and the C one) exactly a job's whose working directory is ``cwd``.

    The zygote does it once, so that its clones start with it; a job process then only fixes ``HOME`` and
    ``TMPDIR`` when its role works elsewhere (same keys, same order: it ends up with the same environment).
    """
    global _scrubbed_for
    if _scrubbed_for is not None:
        if _scrubbed_for != cwd:
            os.environ["HOME"] = cwd
            os.environ["TMPDIR"] = cwd
            _scrubbed_for = cwd
        return
    os.environ.clear()
    os.environ.update(
        {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": cwd,
            "TMPDIR": cwd,
            "LANG": "C.UTF-8",
            "PYTHONHASHSEED": "0",
            "PYTHONIOENCODING": "utf-8",
        }
    )
    _scrubbed_for = cwd


def enter(jail: dict) -> None:
    """Jail the calling process, all but its limits (see :func:`set_limits`). Raises OSError if a step fails.

    Args:
        jail: ``cwd``, ``uid``, ``gid``, ``drop_uid`` (root server), ``seccomp``.
    """
    os.setsid()
    os.chdir(jail["cwd"])
    if jail["drop_uid"]:
        os.setgroups([])
        os.setresgid(jail["gid"], jail["gid"], jail["gid"])
        os.setresuid(jail["uid"], jail["uid"], jail["uid"])
    _drop_capabilities()
    # Die with the server (set after the uid change, which clears it). The server's startup sweep covers the race.
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    scrub_environ(jail["cwd"])
    if jail["seccomp"]:
        install_seccomp()


def set_limits(limits: dict) -> None:
    """The job's rlimits (``timeout``, ``memory_mb``, ``file_mb``, ``max_processes``, ``max_open_files``); soft and
    hard, so the job cannot raise them (lowering needs no privilege, so this may come after :func:`enter`)."""
    mb = 1024 * 1024
    for res, value in (
        (resource.RLIMIT_CPU, int(limits["timeout"]) + 2),
        (resource.RLIMIT_AS, int(limits["memory_mb"]) * mb),
        (resource.RLIMIT_FSIZE, int(limits["file_mb"]) * mb),
        (resource.RLIMIT_NPROC, int(limits["max_processes"])),
        (resource.RLIMIT_NOFILE, int(limits["max_open_files"])),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_MSGQUEUE, 0),
        (resource.RLIMIT_MEMLOCK, 0),
    ):
        resource.setrlimit(res, (value, value))


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


_CAP_HEADER, _CAP_DATA = _CapHeader(0x20080522, 0), (_CapData * 2)()  # every set empty
_CAP_ARGS = (ctypes.addressof(_CAP_HEADER), ctypes.addressof(_CAP_DATA))


def _drop_capabilities() -> None:
    """Empty every capability set (also inside a user namespace, where a uid change would not) and forbid
    regaining privileges through setuid binaries."""
    _check(_capset(*_CAP_ARGS), "capset")
    _check(_prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")


# ------------------------------------------------------------------------------------------------ seccomp
_AUDIT_ARCH_X86_64 = 0xC000003E
_RET_ALLOW, _RET_KILL = 0x7FFF0000, 0x80000000
_EPERM, _ENOSYS = 1, 38
# x86_64 numbers of the system calls refused with EPERM (see the module docstring).
DENIED_SYSCALLS = {
    "shmget": 29,
    "semget": 64,
    "msgget": 68,
    "ptrace": 101,
    "pivot_root": 155,
    "chroot": 161,
    "mount": 165,
    "umount2": 166,
    "mq_open": 240,
    "add_key": 248,
    "request_key": 249,
    "keyctl": 250,
    "unshare": 272,
    "perf_event_open": 298,
    "setns": 308,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "memfd_create": 319,
    "bpf": 321,
    "userfaultfd": 323,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "mount_setattr": 442,
}
_CLONE, _CLONE3 = 56, 435


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k)


def seccomp_program() -> bytes:
    """The BPF filter (x86_64): refuse ``DENIED_SYSCALLS`` and namespace-making clones, allow the rest."""
    ld, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    deny, nosys = 0x00050000 | _EPERM, 0x00050000 | _ENOSYS
    body = [_insn(ld, 0)]  # A = nr
    body.append(_insn(jge, 0x40000000, 0, 1))  # x32 ABI
    body.append(_insn(ret, deny))
    for number in sorted(DENIED_SYSCALLS.values()):
        body += [_insn(jeq, number, 0, 1), _insn(ret, deny)]
    body += [_insn(jeq, _CLONE3, 0, 1), _insn(ret, nosys)]
    body += [_insn(jeq, _CLONE, 0, 3), _insn(ld, 16), _insn(jset, _NAMESPACE_FLAGS, 0, 1), _insn(ret, deny)]
    body.append(_insn(ret, _RET_ALLOW))
    head = [_insn(ld, 4), _insn(jeq, _AUDIT_ARCH_X86_64, 1, 0), _insn(ret, _RET_KILL)]
    return b"".join(head + body)


def seccomp_supported() -> bool:
    return _MACHINE == "x86_64"


class _Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


_PROGRAM = seccomp_program()
_FILTER = ctypes.create_string_buffer(_PROGRAM, len(_PROGRAM))  # built once in the server
_PROG = _Prog(len(_PROGRAM) // 8, ctypes.cast(_FILTER, ctypes.c_void_p))
_PROG_ADDRESS = ctypes.addressof(_PROG)


def install_seccomp() -> None:
    """Install :func:`seccomp_program` on the calling thread (needs ``no_new_privs``)."""
    _check(_prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, _PROG_ADDRESS, 0, 0), "seccomp")
