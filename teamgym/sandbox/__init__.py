"""Isolated, fast execution of untrusted Python (placeholder docstring, expanded below)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from teamgym.sandbox.pool import Sandbox, default_hide_paths, default_sandbox
from teamgym.sandbox.result import STATUSES, ExecResult, Job, Status


def run_python(code: str, stdin: str = "", *, timeout: float = 1.0, memory_mb: int = 512, **limits: Any) -> ExecResult:
    """Run one program in the shared sandbox."""
    return default_sandbox().run_python(code, stdin, timeout=timeout, memory_mb=memory_mb, **limits)


def run_many(jobs: Iterable[Job | Mapping[str, Any] | str], workers: int | None = None) -> list[ExecResult]:
    """Run many programs in parallel; results in job order."""
    return default_sandbox(workers).run_many(jobs)
