"""One sandbox batch per env step: programs x tests for a problem, through ``teamgym.sandbox.run_matrix``.

Verdicts come from the sandbox harness (host-side comparison of ``assert expr == literal`` values and of stdio
outputs), never from what a program prints. For call-style problems the program's top level (the part before
the tests) gets its own ``timeout``: a program that never finishes defining its functions costs one timeout,
not one per test.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from teamgym import sandbox
from teamgym.envs.coder_tester.data import Problem, TestCase

__all__ = ["Verdict", "execute", "first_infra_error"]

# An interval timer around the top level only: the harness then sets its own per test. A program may cancel
# it, which only costs it time. A handler is needed: the job is PID 1 of its namespace, where default signal
# actions are void.
_GUARD_ON = (
    '__import__("signal").signal(__import__("signal").SIGALRM, __import__("signal").default_int_handler); '
    '__import__("signal").setitimer(__import__("signal").ITIMER_REAL, {timeout})\n'
)
_GUARD_OFF = '\n__import__("signal").setitimer(__import__("signal").ITIMER_REAL, 0)\n'


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
) -> list[list[Verdict]]:
    """The ``programs x tests`` verdicts for ``problem``, in one sandbox call (``[program][test]``).

    ``programs`` are the agents' code (or the golden/mutant programs): the problem's prelude is added here.
    """
    if not programs or not tests:
        return [[] for _ in programs]
    if problem.style == "stdio":
        raw = sandbox.run_matrix(
            list(programs),
            [(t.input, t.output) for t in tests],
            kind="stdio",
            timeout=timeout,
            memory_mb=memory_mb,
        )
    else:
        guarded = [_GUARD_ON.format(timeout=timeout) + problem.program(p) + _GUARD_OFF for p in programs]
        raw = sandbox.run_matrix(
            guarded,
            [t.input for t in tests],
            kind="assert",
            entry_point=_bindable(problem.entry_point),
            setup=problem.test_setup,
            timeout=timeout,
            memory_mb=memory_mb,
        )
    return [
        [Verdict(v.passed, v.status, v.expected, v.actual, v.error or "", v.infra_error or "") for v in row]
        for row in raw
    ]


def _bindable(entry_point: str) -> str | None:
    return entry_point if entry_point.isidentifier() else None


def first_infra_error(matrix: Sequence[Sequence[Verdict]]) -> str:
    """The first infrastructure error in a verdict matrix, or ``""``."""
    for row in matrix:
        for verdict in row:
            if verdict.infra_error:
                return verdict.infra_error
    return ""
