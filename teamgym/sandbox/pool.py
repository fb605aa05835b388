"""A pool of warm fork servers: the host side of the sandbox."""

from __future__ import annotations

import atexit
import json
import logging
import os
import queue
import select
import struct
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from teamgym.errors import InvalidArgumentError, SandboxError
from teamgym.host import available_cores
from teamgym.sandbox import _tidy
from teamgym.sandbox._literal import answer
from teamgym.sandbox.result import ExecResult, Job

logger = logging.getLogger(__name__)

_SERVER_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_server.py")
_SERVER_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "PYTHONHASHSEED": "0", "LANG": "C.UTF-8"}
_STARTUP_TIMEOUT = 30.0
_warned: set[str] = set()


_DIR_PREFIX = "teamgym-sandbox-pid"
_stale_checked = False


def _remove_stale_dirs() -> None:
    """Remove server dirs left by hosts that were killed before they could clean up (once per process)."""
    global _stale_checked
    if _stale_checked:
        return
    _stale_checked = True
    root = tempfile.gettempdir()
    for name in os.listdir(root):
        if not name.startswith(_DIR_PREFIX):
            continue
        try:
            pid = int(name[len(_DIR_PREFIX) :].split("-", 1)[0])
            os.kill(pid, 0)
        except ProcessLookupError:
            _tidy.remove(os.path.join(root, name))
        except (ValueError, PermissionError):
            continue


class _ServerDied(Exception):
    pass


def base_interpreter() -> str:
    """The interpreter's own binary, outside any virtual environment. A server needs only the stdlib (it runs with
    ``-S``), and started from a venv's ``bin/python`` it would have to rebuild the venv's path (often inside a home
    folder or the project's checkout) in every jail for a job to start the interpreter."""
    for candidate in (getattr(sys, "_base_executable", None), sys.executable):
        real = os.path.realpath(candidate) if candidate else ""
        if real and os.path.isfile(real) and os.access(real, os.X_OK):
            return real
    return sys.executable


class _Server:
    """One warm fork-server process, talking length-prefixed JSON over its stdin/stdout."""

    def __init__(self, slot: int, namespaces: bool = True, packages: Sequence[str] = ()):
        self.lock = threading.Lock()
        _remove_stale_dirs()
        self.base = tempfile.mkdtemp(prefix=f"{_DIR_PREFIX}{os.getpid()}-{slot}-")
        try:
            self.proc = subprocess.Popen(
                [
                    base_interpreter(),
                    "-s",  # no user site
                    "-S",  # no site: no site-packages and no .pth hooks in the server, so none in its jobs
                    _SERVER_SCRIPT,
                    str(slot),
                    self.base,
                    "1" if namespaces else "0",
                    json.dumps(list(packages)),
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=_SERVER_ENV,
                cwd=self.base,
                start_new_session=True,
                close_fds=True,
            )
            hello = self._read(time.monotonic() + _STARTUP_TIMEOUT)
        except (OSError, _ServerDied) as exc:
            self.close()
            raise SandboxError(
                f"the sandbox server could not start ({exc}); see the server's stderr above. "
                "Check that /proc is mounted and that the Python executable can run."
            ) from exc
        self.isolation: dict[str, Any] = hello["isolation"]
        self.zygote_pid: int | None = hello.get("zygote")
        warning = self.isolation.get("warning")
        if warning and warning not in _warned:
            _warned.add(warning)
            logger.warning("teamgym.sandbox is degraded: %s", warning)

    def request(self, jobs: list[dict], budget: float) -> list[dict]:
        body = json.dumps({"jobs": jobs}).encode()
        try:
            self.proc.stdin.write(struct.pack(">I", len(body)) + body)
            self.proc.stdin.flush()
        except (OSError, ValueError) as exc:
            raise _ServerDied(f"could not send jobs: {exc}") from exc
        return self._read(time.monotonic() + budget)["results"]

    def _read(self, deadline: float) -> dict:
        fd = self.proc.stdout.fileno()
        head = self._read_exact(fd, 4, deadline)
        return json.loads(self._read_exact(fd, struct.unpack(">I", head)[0], deadline))

    def _read_exact(self, fd: int, n: int, deadline: float) -> bytes:
        chunks, got = [], 0
        while got < n:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise _ServerDied("no reply before the deadline")
            chunk = os.read(fd, min(n - got, 1 << 20))
            if not chunk:
                raise _ServerDied(f"the server exited (code {self.proc.poll()})")
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        proc = getattr(self, "proc", None)
        if proc is not None:
            for stream in (proc.stdin, proc.stdout):
                try:
                    stream.close()
                except OSError:
                    pass
            try:
                proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        _tidy.remove(self.base)  # a killed server can leave a job's tree of any depth: no recursion here


class Sandbox:
    """A pool of ``workers`` warm fork servers running untrusted Python; each job in its own jailed child.

    Servers start lazily on first use, restart when one dies, and shut down on :meth:`close`, at ``with`` exit
    and at interpreter exit.

    Args:
        workers: servers (parallel jobs); default the cores this process may run on
            (:func:`teamgym.host.available_cores`).
        namespaces: False skips all namespaces, as on a kernel that refuses them: the degraded mode, for
            testing it. Leave True in production.
        packages: installed distributions (pip names, e.g. ``("sympy", "mpmath")``: list the dependencies too)
            that jobs may import; nothing else outside the standard library is visible to them.

    >>> with Sandbox(workers=2) as box:
    ...     box.run_python("print(input()[::-1])", "abc").stdout
    'cba\\n'
    """

    def __init__(self, workers: int | None = None, *, namespaces: bool = True, packages: Iterable[str] = ()):
        workers = available_cores() if workers is None else workers
        if not isinstance(workers, int) or isinstance(workers, bool) or not 1 <= workers <= 1024:
            raise InvalidArgumentError(
                f"workers={workers!r}: expected an int in [1, 1024] or None for "
                f"the available cores ({available_cores()})"
            )
        self.workers = workers
        self.namespaces = namespaces
        self.packages = tuple(sorted(set(packages)))
        self._package_paths = [path for name in self.packages for path in package_paths(name)]
        self._servers: list[_Server | None] = [None] * workers
        self._start_lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._closed = False
        self._finalizer = weakref.finalize(self, Sandbox._shutdown, self._servers)

    @property
    def isolation(self) -> dict[str, Any]:
        """What the kernel granted: ``pid_ns``, ``mount_ns``, ``net_ns``, ``user_ns``, ``uid_drop``,
        ``warning``."""
        return self._server(0).isolation

    def run_python(self, code: str, stdin: str = "", **limits: Any) -> ExecResult:
        """Run one program; ``limits`` are :class:`Job` fields (``timeout``, ``memory_mb``...)."""
        return self.run_many([Job(code=code, stdin=stdin, **limits)])[0]

    def run_many(self, jobs: Iterable[Job | Mapping[str, Any] | str]) -> list[ExecResult]:
        """Run jobs in parallel over the servers; results come back in job order.

        A program that only binds literals and prints them is answered by the host without running it
        (:mod:`teamgym.sandbox._literal`): its result is the one the jail gives, ``duration`` 0.
        """
        coerced = [Job.coerce(job) for job in jobs]
        results: list[ExecResult | None] = [answer(job) for job in coerced]
        todo = [i for i, result in enumerate(results) if result is None]
        ran = self.run_wire([coerced[i].to_wire() for i in todo])  # also refuses a closed sandbox
        for i, r in zip(todo, ran, strict=True):
            results[i] = ExecResult(**{k: v for k, v in r.items() if k != "records"})
        return results  # type: ignore[return-value]

    def run_wire(self, wire: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Run server-format job dicts and return the server's result dicts (the test harness uses this)."""
        if self._closed:
            raise SandboxError("this Sandbox is closed: create a new one")
        if not wire:
            return []
        results: list[dict[str, Any] | None] = [None] * len(wire)
        size = max(1, min(16, len(wire) // (self.workers * 4)))
        chunks = [list(range(i, min(i + size, len(wire)))) for i in range(0, len(wire), size)]
        if len(chunks) == 1:
            self._drain(self._pick_free(), _single(chunks[0]), wire, results)
        else:
            todo: queue.SimpleQueue[list[int]] = queue.SimpleQueue()
            for chunk in chunks:
                todo.put(chunk)
            if self._executor is None:
                self._executor = ThreadPoolExecutor(self.workers, thread_name_prefix="teamgym-sandbox")
            n = min(self.workers, len(chunks))
            futures = [self._executor.submit(self._drain, slot, todo, wire, results) for slot in range(n)]
            for future in futures:
                future.result()
        return results  # type: ignore[return-value]

    def _pick_free(self) -> int:
        for slot in range(self.workers):
            server = self._servers[slot]
            if server is None or not server.lock.locked():
                return slot
        return threading.get_ident() % self.workers

    def _drain(self, slot: int, todo: queue.SimpleQueue[list[int]], wire: list[dict], results: list) -> None:
        while True:
            try:
                chunk = todo.get_nowait()
            except queue.Empty:
                return
            batch = [wire[i] for i in chunk]
            for i, result in zip(chunk, self._submit(slot, batch), strict=True):
                results[i] = result

    def _submit(self, slot: int, batch: list[dict]) -> list[dict]:
        server = self._server(slot)
        budget = sum(float(j["timeout"]) + 2.0 for j in batch) + 20.0  # jails may take a while to come up when busy
        with server.lock:
            try:
                return server.request(batch, budget)
            except _ServerDied as exc:
                reason = str(exc)
                self._restart(slot, server)
        if len(batch) > 1:  # find which job broke it: rerun each alone on a fresh server
            return [self._submit(slot, [job])[0] for job in batch]
        return [
            {
                "status": "error",
                "stdout": "",
                "stderr": "",
                "returncode": None,
                "duration": 0.0,
                "infra_error": f"the sandbox server died while running this job ({reason}); it was restarted",
            }
        ]

    def _server(self, slot: int) -> _Server:
        server = self._servers[slot]
        if server is None or not server.alive():
            with self._start_lock:
                server = self._servers[slot]
                if server is None or not server.alive():
                    if self._closed:
                        raise SandboxError("this Sandbox is closed: create a new one")
                    if server is not None:
                        server.close()
                    server = self._servers[slot] = _Server(slot, self.namespaces, self._package_paths)
        return server

    def _restart(self, slot: int, server: _Server) -> None:
        server.proc.kill()
        server.close()
        with self._start_lock:
            if self._servers[slot] is server:
                self._servers[slot] = None

    def close(self) -> None:
        """Stop every server and remove their temp dirs. Idempotent."""
        self._closed = True
        if self._executor is not None:
            self._executor.shutdown(wait=True)
        self._finalizer()

    @staticmethod
    def _shutdown(servers: list[_Server | None]) -> None:
        for i, server in enumerate(servers):
            if server is not None:
                server.close()
                servers[i] = None

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _single(chunk: list[int]) -> queue.SimpleQueue[list[int]]:
    todo: queue.SimpleQueue[list[int]] = queue.SimpleQueue()
    todo.put(chunk)
    return todo


_default: Sandbox | None = None
_default_lock = threading.Lock()


def default_sandbox(workers: int | None = None, packages: Iterable[str] = ()) -> Sandbox:
    """The shared process-wide :class:`Sandbox`.

    It is recreated when a different ``workers`` is asked for, or packages it does not expose yet (it then exposes
    every package asked for so far in this process).
    """
    global _default
    with _default_lock:
        wanted = workers or available_cores()
        needed = set(packages) | (set(_default.packages) if _default is not None and not _default._closed else set())
        if _default is None or _default._closed or _default.workers != wanted or needed != set(_default.packages):
            if _default is not None:
                _default.close()
            _default = Sandbox(wanted, packages=needed)
        return _default


def package_paths(name: str) -> list[str]:
    """The top-level folders and modules an installed distribution put in its site folder (what a job needs to
    import it).

    Raises:
        InvalidArgumentError: ``name`` is not an installed distribution.
    """
    from importlib import metadata

    try:
        distribution = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        raise InvalidArgumentError(
            f"packages: {name!r} is not an installed distribution: pip install {name}, or leave it out"
        ) from None
    base = os.path.realpath(str(distribution.locate_file("")))
    tops = set()
    for file in distribution.files or []:
        parts = os.path.normpath(str(file)).split(os.sep)
        if parts[0] in ("..", "") or parts[0].endswith(".pth"):
            continue
        # The site folder's own __pycache__ is shared by every top-level module: only this distribution's files.
        tops.add(os.path.join(*parts[:2]) if parts[0] == "__pycache__" else parts[0])
    return sorted(path for path in (os.path.join(base, top) for top in tops) if os.path.exists(path))


@atexit.register
def _close_default() -> None:
    if _default is not None:
        _default.close()
