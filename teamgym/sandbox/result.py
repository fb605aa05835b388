"""What goes into the sandbox (:class:`Job`) and what comes out (:class:`ExecResult`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal

from teamgym.errors import InvalidArgumentError

Status = Literal["ok", "error", "timeout", "memory", "output_limit", "killed"]
STATUSES: tuple[str, ...] = ("ok", "error", "timeout", "memory", "output_limit", "killed")


@dataclass(frozen=True)
class ExecResult:
    """The outcome of one untrusted program.

    Attributes:
        status: ``ok`` (exit 0), ``error`` (non-zero exit, uncaught exception, syntax error), ``timeout`` (wall
            deadline or CPU limit hit), ``memory`` (MemoryError: the address-space limit), ``output_limit``
            (stdout or stderr passed the cap; the process was killed), ``killed`` (ended by a signal it did not
            get from the deadline: segfault, abort, killing itself).
        stdout: standard output, decoded as UTF-8 with undecodable bytes replaced, at most ``output_limit`` bytes.
        stderr: standard error, same rules.
        returncode: the exit code, negative for a signal (``-9`` after a deadline kill); ``None`` if it never ran.
        duration: wall seconds from start to exit. The only field that varies from run to run.
        infra_error: ``None`` unless the sandbox itself failed (its server died, fork hit EAGAIN, the job never
            started). Never the program's fault: trainers should drop such samples instead of penalising them.
    """

    status: Status
    stdout: str = ""
    stderr: str = ""
    returncode: int | None = None
    duration: float = 0.0
    infra_error: str | None = None

    @property
    def ok(self) -> bool:
        """True when the program exited 0 and the sandbox did not fail."""
        return self.status == "ok" and self.infra_error is None


@dataclass(frozen=True)
class Job:
    """One program to run. Defaults are the documented sandbox limits.

    Attributes:
        code: Python source, run as ``__main__`` of a fresh module.
        stdin: text fed on standard input.
        timeout: wall-clock seconds before the whole process tree is killed (CPU limit: ``int(timeout) + 2``).
        memory_mb: address-space limit (``RLIMIT_AS``) in MiB.
        output_limit: cap in bytes on stdout and on stderr, each (default 1 MB).
        file_mb: largest single file the program may write (``RLIMIT_FSIZE``), MiB.
        disk_mb: size of its private tmpfs working directory, MiB (when a mount namespace is available).
        max_processes: processes and threads (``RLIMIT_NPROC``), counted per job uid / user namespace.
        max_open_files: open file descriptors (``RLIMIT_NOFILE``).
    """

    code: str
    stdin: str = ""
    timeout: float = 1.0
    memory_mb: int = 512
    output_limit: int = 1_000_000
    file_mb: int = 16
    disk_mb: int = 64
    max_processes: int = 64
    max_open_files: int = 64

    def __post_init__(self) -> None:
        if not isinstance(self.code, str):
            raise InvalidArgumentError(f"code must be a str of Python source, got {type(self.code).__name__}: "
                                       "decode bytes first (e.g. code.decode('utf-8', 'replace'))")
        if not isinstance(self.stdin, str):
            raise InvalidArgumentError(f"stdin must be a str, got {type(self.stdin).__name__}: pass text")
        if not (isinstance(self.timeout, (int, float)) and math.isfinite(self.timeout) and 0 < self.timeout <= 600):
            raise InvalidArgumentError(f"timeout={self.timeout!r}: expected seconds in (0, 600]; e.g. timeout=1.0")
        for name, low in (("memory_mb", 32), ("output_limit", 1), ("file_mb", 1), ("disk_mb", 1),
                          ("max_processes", 1), ("max_open_files", 8)):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise InvalidArgumentError(f"{name}={value!r}: expected an int >= {low}; "
                                           f"leave it out for the default {_DEFAULTS[name]}")

    @classmethod
    def coerce(cls, job: Job | Mapping[str, Any] | str) -> Job:
        """A :class:`Job` from a Job, a dict of its fields, or bare source code."""
        if isinstance(job, Job):
            return job
        if isinstance(job, str):
            return cls(code=job)
        if isinstance(job, Mapping):
            unknown = set(job) - set(_DEFAULTS) - {"code"}
            if unknown:
                raise InvalidArgumentError(f"unknown job field(s) {sorted(unknown)}: expected a subset of "
                                           f"{['code', *_DEFAULTS]}; remove or rename them")
            if "code" not in job:
                raise InvalidArgumentError("a job dict needs a 'code' key holding Python source")
            return cls(**job)
        raise InvalidArgumentError(f"a job must be a Job, a dict or a str of code, got {type(job).__name__}")

    def to_wire(self) -> dict[str, Any]:
        """The dict the fork server reads."""
        return asdict(self)


_DEFAULTS = {f.name: f.default for f in fields(Job) if f.name != "code"}
