"""Run many envs' programs as one batch ahead of their steps, and hand each step its program's result.

A rollout steps K candidates of every open node, one after another, and each tool step runs one program: one
``run_python`` call at a time, one pool worker busy. An env that declares the programs a step would run
(:meth:`teamgym.core.TurnBasedTextEnv.programs`) lets the rollout engine gather every program of a tree level, run
them all with one :func:`run_programs` call (every worker busy), and step the candidates inside
:func:`prefetched`: there, :func:`teamgym.sandbox.run_python` and :func:`teamgym.sandbox.run_many` return the
result already computed for an identical job (same code, stdin, limits and packages) instead of running it again.

A declaration is only a hint: a job that was not prefetched (or whose run hit an infrastructure error, which the
step's own call then retries) simply runs as before, so a wrong declaration costs time, never a wrong result.
Results are installed per thread, so env threads and other users of the sandbox never see each other's.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from teamgym.sandbox.pool import default_sandbox
from teamgym.sandbox.result import ExecResult, Job

__all__ = ["Program", "prefetched", "run_programs"]


@dataclass(frozen=True)
class Program:
    """One job as an env would run it: ``run_python(job.code, job.stdin, packages=packages, **limits)``.

    Attributes:
        job: the program and its limits.
        packages: installed distributions the program may import (sorted; as passed to ``run_python``).
    """

    job: Job
    packages: tuple[str, ...] = field(default=())

    @classmethod
    def of(cls, code: str, stdin: str = "", *, packages: Iterable[str] = (), **limits: object) -> Program:
        """The program ``run_python(code, stdin, packages=packages, **limits)`` runs."""
        return cls(Job(code=code, stdin=stdin, **limits), tuple(sorted(set(packages))))  # type: ignore[arg-type]


def run_programs(programs: Sequence[Program], workers: int | None = None) -> list[ExecResult]:
    """Run ``programs`` (identical ones once) on the shared sandbox, one ``run_many`` per package set; results in
    order."""
    unique = list(dict.fromkeys(programs))
    by_packages: dict[tuple[str, ...], list[Program]] = {}
    for program in unique:
        by_packages.setdefault(program.packages, []).append(program)
    done: dict[Program, ExecResult] = {}
    for packages, group in by_packages.items():
        results = default_sandbox(workers, packages).run_many([p.job for p in group])
        done.update(zip(group, results, strict=True))
    return [done[p] for p in programs]


_installed = threading.local()


@contextmanager
def prefetched(programs: Sequence[Program], results: Sequence[ExecResult]) -> Iterator[None]:
    """Within the block (in this thread), ``run_python``/``run_many`` calls of these programs return these results.

    Results with an ``infra_error`` are left out: the step's own call runs the program again.
    """
    previous = getattr(_installed, "results", None)
    table = dict(previous or {})
    table.update((p, r) for p, r in zip(programs, results, strict=True) if r.infra_error is None)
    _installed.results = table
    try:
        yield
    finally:
        _installed.results = previous


def lookup(job: Job, packages: Iterable[str]) -> ExecResult | None:
    """The prefetched result of ``job`` run with ``packages`` in this thread, or ``None``."""
    table = getattr(_installed, "results", None)
    if not table:
        return None
    return table.get(Program(job, tuple(sorted(set(packages)))))
