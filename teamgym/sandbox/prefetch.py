"""Run many envs' programs as one batch ahead of their steps, and hand each step its program's result.

A rollout steps K candidates of every open node, one after another, and each tool step runs one program: one
``run_python`` call at a time, one pool worker busy. An env that declares the programs a step would run
(:meth:`teamgym.core.TurnBasedTextEnv.programs`) lets the rollout engine gather every program of a tree level, run
them all with one :func:`run_programs` call (every worker busy), and step the candidates inside
:func:`prefetched`: there, :func:`teamgym.sandbox.run_python` and :func:`teamgym.sandbox.run_many` return the
result already computed for an identical job (same code, stdin, limits and packages) instead of running it again.
Test matrices (:func:`teamgym.sandbox.matrix_jobs`' server-format jobs, as ``coder_tester-v0`` runs them) are
declared as :class:`WireProgram` and served the same way to :func:`teamgym.sandbox.run_wire` and to
:func:`teamgym.sandbox.run_matrix` on the shared sandbox.

A declaration is only a hint: a job that was not prefetched (or whose run hit an infrastructure error, which the
step's own call then retries) simply runs as before, so a wrong declaration costs time, never a wrong result.
Results are installed per thread, so env threads and other users of the sandbox never see each other's.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from teamgym.sandbox.pool import default_sandbox
from teamgym.sandbox.result import ExecResult, Job

__all__ = ["Program", "WireProgram", "prefetched", "run_programs", "run_wire"]


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


@dataclass(frozen=True)
class WireProgram:
    """One server-format job as an env would run it with :func:`teamgym.sandbox.run_wire`: a dict such as
    :func:`teamgym.sandbox.matrix_jobs` builds (a program with its test records, or a judge), kept as canonical
    JSON so that equal jobs are equal keys.

    Attributes:
        wire: the job dict as JSON with sorted keys.
        packages: installed distributions the job may import (sorted).
    """

    wire: str
    packages: tuple[str, ...] = field(default=())

    @classmethod
    def of(cls, job: Mapping[str, Any], *, packages: Iterable[str] = ()) -> WireProgram:
        """The program ``run_wire([job], packages=packages)`` runs."""
        return cls(_canonical(job), tuple(sorted(set(packages))))

    def job(self) -> dict[str, Any]:
        return json.loads(self.wire)


def _canonical(job: Mapping[str, Any]) -> str:
    return json.dumps(job, sort_keys=True, separators=(",", ":"))


AnyProgram = Program | WireProgram


def run_programs(programs: Sequence[AnyProgram], workers: int | None = None) -> list[ExecResult | dict[str, Any]]:
    """Run ``programs`` (identical ones once) on the shared sandbox, one ``run_many`` (``Program``) or
    ``run_wire`` (``WireProgram``: the server's result dicts) per package set; results in order."""
    unique = list(dict.fromkeys(programs))
    by_call: dict[tuple[bool, tuple[str, ...]], list[AnyProgram]] = {}
    for program in unique:
        by_call.setdefault((isinstance(program, WireProgram), program.packages), []).append(program)
    done: dict[AnyProgram, ExecResult | dict[str, Any]] = {}
    for (wire, packages), group in by_call.items():
        box = default_sandbox(workers, packages)
        if wire:
            results: list[Any] = box.run_wire([p.job() for p in group])  # type: ignore[union-attr]
        else:
            results = box.run_many([p.job for p in group])  # type: ignore[union-attr]
        done.update(zip(group, results, strict=True))
    return [done[p] for p in programs]


def run_wire(jobs: Sequence[Mapping[str, Any]], workers: int | None = None, packages: Iterable[str] = ()
             ) -> list[dict[str, Any]]:
    """Run server-format job dicts (:func:`teamgym.sandbox.matrix_jobs`) on the shared sandbox; the server's result
    dicts in job order. Inside :func:`prefetched`, the jobs run ahead of time are not run again."""
    packages = tuple(packages)
    return serve(list(jobs), lambda job: lookup_wire(job, packages),
                 lambda missing: default_sandbox(workers, packages).run_wire([dict(job) for job in missing]))


def serve(jobs: Sequence[Any], find: Callable[[Any], Any], run: Callable[[list[Any]], list[Any]]) -> list[Any]:
    """Each job's result in order: the prefetched one ``find`` gives, else from one ``run`` call for all the jobs
    without one (not made when every job was prefetched)."""
    results = [find(job) for job in jobs]
    missing = [i for i, done in enumerate(results) if done is None]
    if missing:
        for i, result in zip(missing, run([jobs[i] for i in missing]), strict=True):
            results[i] = result
    return results


_installed = threading.local()


@contextmanager
def prefetched(programs: Sequence[AnyProgram], results: Sequence[ExecResult | dict[str, Any]]) -> Iterator[None]:
    """Within the block (in this thread), ``run_python``/``run_many``/``run_wire`` calls of these programs return
    these results.

    Results with an ``infra_error`` are left out: the step's own call runs the program again.
    """
    previous = getattr(_installed, "results", None)
    table = dict(previous or {})
    table.update((p, r) for p, r in zip(programs, results, strict=True) if not _infra_error(r))
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


def lookup_wire(job: Mapping[str, Any], packages: Iterable[str]) -> dict[str, Any] | None:
    """The prefetched result dict of the server-format ``job`` run with ``packages`` in this thread, or ``None``
    (a copy: the caller may change it)."""
    table = getattr(_installed, "results", None)
    if not table:
        return None
    done = table.get(WireProgram.of(job, packages=packages))
    return None if done is None else json.loads(json.dumps(done))


def _infra_error(result: ExecResult | Mapping[str, Any]) -> bool:
    if isinstance(result, ExecResult):
        return result.infra_error is not None
    return bool(result.get("infra_error"))
