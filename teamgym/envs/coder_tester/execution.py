"""One sandbox batch per env step: programs x test suites for a problem, through ``teamgym.sandbox``.

Verdicts come from the sandbox's judge (which never runs the programs' code: it calls their functions with plain
data) and from host-side comparison of ``assert expr == literal`` values and of stdio outputs, never from what a
program prints. For call-style problems the judge runs the problem's own prelude (the prompt's imports and
helpers) and test setup, so a program cannot replace a helper the tests use; the program's top level gets
``timeout`` seconds, so a program that never finishes defining its functions costs one timeout, not one per test.

Suites written by different hands (the ground truth, the tester's tests) go to separate judges in one sandbox
call, so model-written tests never share a process with the ground-truth ones.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from teamgym import sandbox
from teamgym.envs.coder_tester.data import Problem, TestCase

__all__ = ["Verdict", "declare", "execute", "execute_suites", "first_infra_error"]

Matrix = list[list["Verdict"]]


@dataclass(frozen=True)
class Verdict:
    """One program on one test: the deterministic part of ``sandbox.TestVerdict`` (for infos and prompts)."""

    passed: bool
    status: str
    expected: str = ""
    actual: str = ""
    error: str = ""
    infra_error: str = ""


def execute(
    problem: Problem,
    programs: Sequence[str],
    tests: Sequence[TestCase],
    *,
    timeout: float,
    memory_mb: int = 512,
) -> Matrix:
    """The ``programs x tests`` verdicts for ``problem`` (``[program][test]``) in one sandbox call.

    ``programs`` are the agents' code (or the golden/mutant programs): the problem's prelude is added here.
    """
    return execute_suites(problem, programs, [tests], timeout=timeout, memory_mb=memory_mb)[0]


def execute_suites(
    problem: Problem,
    programs: Sequence[str],
    suites: Sequence[Sequence[TestCase]],
    *,
    timeout: float,
    memory_mb: int = 512,
) -> list[Matrix]:
    """One verdict matrix per suite (each judged on its own), all in one sandbox call."""
    if not programs:
        return [[] for _ in suites]
    jobs, readers = _suite_jobs(problem, programs, suites, timeout=timeout, memory_mb=memory_mb)
    # The shared sandbox, which serves results a rollout prefetched for its tree level (see `declare`).
    raw = sandbox.run_wire(jobs)
    matrices, start = [], 0
    for count, read in readers:
        if read is None:
            matrices.append([[] for _ in programs])
            continue
        rows = read(raw[start : start + count])
        start += count
        matrices.append(
            [
                [Verdict(v.passed, v.status, v.expected, v.actual, v.error or "", v.infra_error or "") for v in row]
                for row in rows
            ]
        )
    return matrices


def declare(
    problem: Problem,
    programs: Sequence[str],
    suites: Sequence[Sequence[TestCase]],
    *,
    timeout: float,
    memory_mb: int = 512,
) -> list[sandbox.WireProgram]:
    """The sandbox jobs :func:`execute_suites` would run for these arguments, as programs a rollout can run ahead
    of the step (the env's ``_programs`` hook)."""
    if not programs:
        return []
    jobs, _ = _suite_jobs(problem, programs, suites, timeout=timeout, memory_mb=memory_mb)
    return [sandbox.WireProgram.of(job) for job in jobs]


def _suite_jobs(
    problem: Problem,
    programs: Sequence[str],
    suites: Sequence[Sequence[TestCase]],
    *,
    timeout: float,
    memory_mb: int,
) -> tuple[list[dict], list[tuple[int, Callable[[list[dict]], list[list[sandbox.TestVerdict]]] | None]]]:
    jobs: list[dict] = []
    readers: list[tuple[int, Callable[[list[dict]], list[list[sandbox.TestVerdict]]] | None]] = []
    for tests in suites:
        if not tests:
            readers.append((0, None))
            continue
        if problem.style == "stdio":
            suite_jobs, read = sandbox.matrix_jobs(
                list(programs), [(t.input, t.output) for t in tests], kind="stdio", timeout=timeout, memory_mb=memory_mb
            )
        else:
            suite_jobs, read = sandbox.matrix_jobs(
                [problem.program(p) for p in programs],
                [t.input for t in tests],
                kind="assert",
                entry_point=problem.entry_point if problem.entry_point.isidentifier() else None,
                prelude=problem.prelude,
                setup=problem.test_setup,
                timeout=timeout,
                memory_mb=memory_mb,
            )
        readers.append((len(suite_jobs), read))
        jobs += suite_jobs
    return jobs, readers


def first_infra_error(*matrices: Sequence[Sequence[Verdict]]) -> str:
    """The first infrastructure error in verdict matrices, or ``""``."""
    for matrix in matrices:
        for row in matrix:
            for verdict in row:
                if verdict.infra_error:
                    return verdict.infra_error
    return ""
