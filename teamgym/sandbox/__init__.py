"""Isolated, fast execution of untrusted Python; every code-writing role (coder, tester, tools) uses it.

>>> from teamgym.sandbox import run_python, run_many, run_tests
>>> run_python("print(sum(map(int, input().split())))", "2 3").stdout
'5\\n'
>>> [r.status for r in run_many(["print(1)", "1/0", "while True: pass"])]
['ok', 'error', 'timeout']
>>> [v.passed for v in run_tests("def f(x):\\n    return 2 * x", ["assert f(2) == 4", "assert f(3) == 5"],
...                              kind="assert")]
[True, False]

How it works: a pool (:class:`Sandbox`, ``workers`` = the available cores by default) of warm *fork servers*,
each a clean ``python -s`` interpreter (never a fork of the host, which may hold torch and threads). At start
a server enters its own mount namespace (everything read-only, ``/proc`` hidden, homes and dataset caches
replaced by empty folders, a tmpfs as the jobs' cwd) and an empty network namespace; as non-root it first
enters a user namespace. Per job it clones a child straight into new PID and IPC namespaces: the child is
PID 1 there, so when it exits or is killed every process it made (daemons included) dies with it. The child
calls ``setsid``, sets rlimits, drops to the server's unprivileged job uid (when root), drops all
capabilities, sets ``no_new_privs``, scrubs the environment and runs the code as ``__main__``; afterwards the
server empties the tmpfs.

Statuses (:class:`ExecResult` ``.status``):
    ``ok``: exit code 0. ``error``: non-zero exit, uncaught exception, syntax error. ``timeout``: the wall
    deadline (``timeout`` s) or the CPU limit passed; the whole job was killed. ``memory``: a MemoryError (the
    address-space limit). ``output_limit``: stdout or stderr passed ``output_limit`` bytes; killed, output
    truncated. ``killed``: ended by a signal it did not get from our deadline (segfault, abort, self-kill).
    ``infra_error`` (a separate field, ``None`` normally): the sandbox broke (server died, fork EAGAIN, the
    jail could not be set up). Never the model's fault: envs put it in ``infos`` and trainers drop the sample.

Limits (:class:`Job` fields, defaults): ``timeout`` 1.0 s wall (CPU: ``int(timeout) + 2`` s), ``memory_mb``
512 (``RLIMIT_AS``), ``output_limit`` 1 MB per stream, ``file_mb`` 16 (``RLIMIT_FSIZE``), ``disk_mb`` 64
(tmpfs cwd), ``max_processes`` 64 (``RLIMIT_NPROC``, threads included, per job uid or user namespace),
``max_open_files`` 64.

Threat model: the code is hostile and rewarded for escaping. It must not stop, slow for long or write into the
host, read host secrets or expected outputs, reach the network, leave processes or files behind, or fake test
verdicts (see :mod:`teamgym.sandbox.harness` for the reward-hacking defences and the residual risk). Not
covered: kernel exploits (no seccomp; use gVisor or VMs for that threat). What degrades when the kernel
refuses namespaces (one warning is logged, :attr:`Sandbox.isolation` says what was granted): without a PID
namespace, escaped daemons are killed by uid sweep (root) or by process group only (non-root: a double-forking
daemon can survive, and a ``kill(-1)`` can hit the host's own processes); without a mount namespace the cwd is
a real temp dir removed after the job and writes elsewhere are stopped only by file permissions
(world-writable ``/tmp`` and ``/dev/shm`` are writable; non-root: the user's own files too); without a network
namespace the network is reachable. See docs/sandbox.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from teamgym.sandbox.harness import (
    TestVerdict,
    humaneval_tests,
    matrix_jobs,
    normalize_output,
    outputs_match,
    run_matrix,
    run_tests,
)
from teamgym.sandbox.pool import Sandbox, default_sandbox, package_paths
from teamgym.sandbox.prefetch import Program, WireProgram, lookup, prefetched, run_programs, run_wire, serve
from teamgym.sandbox.result import STATUSES, ExecResult, Job, Status

__all__ = [
    "ExecResult",
    "Job",
    "Status",
    "STATUSES",
    "Sandbox",
    "TestVerdict",
    "default_sandbox",
    "package_paths",
    "Program",
    "WireProgram",
    "prefetched",
    "run_programs",
    "humaneval_tests",
    "matrix_jobs",
    "normalize_output",
    "outputs_match",
    "run_many",
    "run_matrix",
    "run_python",
    "run_tests",
    "run_wire",
]


def run_python(
    code: str,
    stdin: str = "",
    *,
    timeout: float = 1.0,
    memory_mb: int = 512,
    packages: Iterable[str] = (),
    **limits: Any,
) -> ExecResult:
    """Run one program in the shared sandbox.

    Args:
        code: Python source, run as ``__main__``.
        stdin: text on standard input.
        timeout: wall seconds before the job's whole process tree is killed.
        memory_mb: memory limit in MiB.
        packages: installed distributions the program may import (e.g. ``("sympy", "mpmath")``); the standard
            library is always there, nothing else is.
        **limits: other :class:`Job` fields (``output_limit``, ``file_mb``, ``disk_mb``...).

    Inside :func:`prefetched`, a program run ahead of time (same code, stdin, limits and packages) returns that run's
    result.
    """
    packages = tuple(packages)
    job = Job(code=code, stdin=stdin, timeout=timeout, memory_mb=memory_mb, **limits)
    done = lookup(job, packages)
    if done is not None:
        return done
    return default_sandbox(packages=packages).run_many([job])[0]


def run_many(
    jobs: Iterable[Job | Mapping[str, Any] | str], workers: int | None = None, packages: Iterable[str] = ()
) -> list[ExecResult]:
    """Run many programs in parallel on the shared sandbox; results in job order.

    Args:
        jobs: :class:`Job` objects, dicts of Job fields, or bare source strings.
        workers: fork servers to use (default the cores this process may run on); changing it restarts the shared pool.
        packages: installed distributions the programs may import (see :func:`run_python`).

    Inside :func:`prefetched`, the programs run ahead of time are not run again.
    """
    packages = tuple(packages)
    return serve([Job.coerce(job) for job in jobs], lambda job: lookup(job, packages),
                 lambda missing: default_sandbox(workers, packages).run_many(missing))
