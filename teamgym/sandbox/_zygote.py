"""The zygote: a clean fork of the server that clones every job process, ahead of need (stdlib only).

It is forked from the server once, before any job exists, and never sees a job's data: a job process it clones
(a *spare*, a child of the server through ``CLONE_PARENT``) jails itself for its role, then waits on a socket of its
own for its job's limits and file descriptors, which the server sends when a job starts. A job, which can read all
of its own memory, so finds no other job's code, inputs, tests or outputs there.
"""

from __future__ import annotations

import collections
import ctypes
import gc
import json
import os
import select
import signal
import socket
import sys

import _jail
import _judge
import _program
import _wire

_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE = 1, 4
_libc = ctypes.CDLL(None, use_errno=True)


class ZygoteDied(Exception):
    """The zygote is gone: the server cannot start jobs any more (the host restarts it)."""


def spare_main(conn: socket.socket, prep: dict, procs_fds: dict[str, int]) -> int:
    """A freshly cloned job process: jail itself, wait for its job on ``conn``, run it. Returns the exit code.

    ``prep`` says everything known before the job: role, jail settings, cgroup. The job message brings the limits
    and the file descriptors. Any failure before the ready byte is the jail's (the server reports an infra error).
    """
    role = prep["role"]
    if prep["cgroup"]:
        os.write(procs_fds[role], b"0")
    _jail.enter(prep["jail"])
    message, fds, _, _ = socket.recv_fds(conn, 1 << 16, 16)
    if not message:  # the server discarded this spare
        return 0
    job = json.loads(message)
    _jail.wire_fds(fds)  # also closes conn and the cgroup fds
    _jail.set_limits(job["limits"])
    spec = _wire.loads(_read_all(_jail.SPEC_FD))
    os.close(_jail.SPEC_FD)
    _jail.python_streams()
    os.write(_jail.STATUS_FD, _jail.READY)
    return _judge.run(spec) if role == "judge" else _program.run(spec)


def _warm_up() -> None:
    """Do here, once, the first-use work of what every job process does, so that none of them repeats it.

    The first ``compile()`` in a process builds the ``ast`` node types (a hundred-odd heap types; ``compile`` checks
    whether it was handed an AST): about 2.5 ms and 200 copied pages in each job process otherwise, since the server
    imports everything from bytecode and never compiles. The source is a constant: no job's data is in the zygote.
    """
    compile("def f(a, *b, c=1, **d):\n    return [x for x in a] if b else {**d}\n", "<warm-up>", "exec")


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


class Zygote:
    """A clean fork of the server that clones job processes ahead of need (see the module docstring).

    Each clone is a *spare*: already jailed for a role (cgroup, uid, capabilities, seccomp...), it waits on a socket
    of its own for its job (limits and file descriptors), which the server sends when a job starts. The server keeps
    ``SPARES`` ready per kind it has used and asks for a replacement as it takes one, so neither the clone nor the
    jail's setup waits on the path of a job.
    """

    SPARES = 2

    def __init__(self, procs_fds: dict[str, int], workdir: str):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            ours.close()
            keep = {0, 1, 2, theirs.fileno(), *procs_fds.values()}
            for fd in range(3, 1 << 12):
                if fd not in keep:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
            _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            _libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
            code = 0
            try:
                _jail.scrub_environ(workdir)  # once here rather than in each job process (a program's, mostly)
                _jail.python_streams()  # the jobs' streams, on fds 0-2 (the zygote never uses them)
                _warm_up()
                gc.freeze()  # the collector of a job never walks (and so never copies) the pages it shares with us
                self._loop(theirs, procs_fds)
            except BaseException:  # noqa: B036 - the server sees the zygote die and stops
                code = 1
            os._exit(code)
        theirs.close()
        self.pid, self.sock = pid, ours
        self.spares: dict[str, collections.deque[tuple[int, socket.socket]]] = {}
        self.pending: dict[str, int] = {}  # spares asked for and not yet received, per kind

    @staticmethod
    def _loop(sock: socket.socket, procs_fds: dict[str, int]) -> None:
        # Every page this loop writes is copied again after each clone (they all turn copy-on-write), so it does as
        # little as it can per spare: kinds parsed once, a plain-text answer.
        preps: dict[bytes, dict] = {}
        rights = (socket.SOL_SOCKET, socket.SCM_RIGHTS)
        while True:
            message = sock.recv(1 << 12)
            if not message:
                return
            prep = preps.get(message)
            if prep is None:
                prep = preps[message] = json.loads(message)
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            try:
                pid = _jail.clone(prep["flags"] | _jail.CLONE_PARENT)
            except OSError as exc:
                ours.close()
                theirs.close()
                sock.send(json.dumps({"kind": message.decode(), "error": str(exc)}).encode())
                continue
            if pid == 0:
                code = 125
                try:
                    sock.close()
                    ours.close()
                    code = spare_main(theirs, prep, procs_fds)
                finally:
                    os._exit(code)
            theirs.close()
            sock.sendmsg([b"%d %s" % (pid, message)], [(*rights, ours.fileno().to_bytes(4, sys.byteorder))])
            ours.close()

    def spawn(self, prep: dict, job: dict, fds: list[int]) -> int:
        """Start a job process of kind ``prep`` with ``job`` (its limits) and ``fds``; its pid (a child of ours).

        Raises:
            OSError: the kernel refused the clone (EAGAIN...), or spares keep dying.
            ZygoteDied: the zygote is gone.
        """
        kind = json.dumps(prep, sort_keys=True)
        spares = self.spares.setdefault(kind, collections.deque())
        self.pending.setdefault(kind, 0)
        self._collect(block=False)
        for _ in range(8):
            while not spares:
                if not self.pending[kind]:
                    self._ask(kind)
                self._collect(block=True)
            pid, conn = spares.popleft()
            try:
                socket.send_fds(conn, [json.dumps(job).encode()], fds)
            except OSError:  # that spare died (its jail failed): forget it, take another
                self._drop(pid, conn)
                continue
            conn.close()
            # Without a PID namespace the sweep after each job kills every process of the job uid, spares too.
            wanted = self.SPARES if prep["flags"] & _jail.CLONE_NEWPID else 0
            while len(spares) + self.pending[kind] < wanted:
                self._ask(kind)
            return pid
        raise OSError(f"job processes of kind {kind} keep dying before their job")

    def spare_pids(self) -> set[int]:
        return {pid for spares in self.spares.values() for pid, _ in spares}

    def discard(self) -> None:
        """End every waiting spare (after a change of settings)."""
        while any(self.pending.values()):
            self._collect(block=True)
        for spares in self.spares.values():
            while spares:
                self._drop(*spares.popleft())

    @staticmethod
    def _drop(pid: int, conn: socket.socket) -> None:
        conn.close()
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass

    def _ask(self, kind: str) -> None:
        try:
            self.sock.send(kind.encode())
        except OSError as exc:
            raise ZygoteDied(str(exc)) from None
        self.pending[kind] += 1

    def _collect(self, *, block: bool) -> None:
        """Receive the spares the zygote made (wait for one when ``block``)."""
        while any(self.pending.values()) and (block or select.select([self.sock], [], [], 0)[0]):
            try:
                message, fds, _, _ = socket.recv_fds(self.sock, 1 << 12, 1)
            except OSError as exc:
                raise ZygoteDied(str(exc)) from None
            if not message:
                raise ZygoteDied("the zygote exited")
            block = False
            if message.startswith(b"{"):  # the kernel refused the clone
                answer = json.loads(message)
                self.pending[answer["kind"]] -= 1
                raise OSError(answer["error"])
            pid, _, kind = message.decode().partition(" ")  # "PID KIND"
            self.pending[kind] -= 1
            self.spares[kind].append((int(pid), socket.socket(fileno=fds[0])))
