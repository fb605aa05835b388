"""Coder and tester rewards as pure functions of execution matrices (CURE, arXiv 2506.03136, Sec. 3).

Notation (CURE): ``B`` is the execution matrix, ``B[j, k] = 1`` when program ``j`` passes test ``k``. Programs
are *correct* when they pass every ground-truth test (the golden solution and any coder attempt that does),
*wrong* otherwise (the env's mutants of the golden solution and the coder's failing attempts).

* :func:`pass_rate`: the coder's reward: the fraction of tests a program passes (CURE's coder reward, on the
  ground-truth tests; the env also uses it on the tester's valid tests for the coder's ``local`` term).
* :func:`cure_test_rewards`: CURE's reward of each generated test ``k`` (``Gen-Verse/CURE
  optimization/reward.py``, as summarised in ALGORITHMS.md): sign ``+1`` if every correct program passes the
  test, else ``-1``; magnitude the fraction of wrong programs it separates (fails, for a ``+1`` test; passes,
  for a ``-1`` test). So a right test earns in ``[0, 1]`` by how many wrong programs it catches and a wrong
  one in ``[-1, 0]`` by how many wrong programs it lets through. Edge cases (our choice, documented): with no
  correct program a test cannot be judged and earns 0; with no wrong program the magnitude is 0.
* :func:`validity`: whether every correct program passes each test (``None`` when there is no correct
  program).
* :func:`precision`: CURE's reward-precision diagnostics ``p_01`` (a wrong program passes a right test) and
  ``p_00`` (a wrong program passes a wrong test).

:func:`cure_test_rewards_reference` is the loop-by-loop definition, kept as the slow reference the fast path
is tested against.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = [
    "pass_rate",
    "correct_programs",
    "validity",
    "cure_test_rewards",
    "cure_test_rewards_reference",
    "precision",
    "suite_kill_rate",
]

Matrix = Sequence[Sequence[bool]]


def pass_rate(verdicts: Sequence[bool]) -> float:
    """The fraction of ``verdicts`` that are passes; 0.0 for no tests."""
    return float(sum(bool(v) for v in verdicts)) / len(verdicts) if verdicts else 0.0


def correct_programs(ground_truth: Matrix) -> list[bool]:
    """Per program, whether it passes every ground-truth test (``ground_truth``: programs x tests)."""
    return [bool(row) and all(row) for row in ground_truth]


def _as_array(matrix: Matrix, correct: Sequence[bool]) -> tuple[np.ndarray, np.ndarray]:
    passes = np.asarray(matrix, dtype=bool)
    is_correct = np.asarray(correct, dtype=bool)
    if passes.size == 0:
        passes = passes.reshape(len(correct), -1)
    assert passes.ndim == 2 and passes.shape[0] == is_correct.shape[0], "one correctness flag per program row"
    return passes, is_correct


def validity(matrix: Matrix, correct: Sequence[bool]) -> list[bool | None]:
    """Per test (column), whether every correct program passes it; ``None`` without a correct program."""
    passes, is_correct = _as_array(matrix, correct)
    if not is_correct.any():
        return [None] * passes.shape[1]
    return [bool(v) for v in passes[is_correct].all(axis=0)]


def cure_test_rewards(matrix: Matrix, correct: Sequence[bool]) -> list[float]:
    """CURE's reward of each test (column of ``matrix``, programs x generated tests), in ``[-1, 1]``.

    Args:
        matrix: ``matrix[j][k]`` is True when program ``j`` passes generated test ``k``.
        correct: per program, whether it passes every ground-truth test.

    Returns:
        One reward per test: ``+(share of wrong programs failing it)`` for a test every correct program
        passes, ``-(share of wrong programs passing it)`` otherwise; 0.0 for every test when no program is
        correct.
    """
    passes, is_correct = _as_array(matrix, correct)
    num_tests = passes.shape[1]
    if not is_correct.any():
        return [0.0] * num_tests
    right = passes[is_correct].all(axis=0)  # (T,)
    wrong_rows = passes[~is_correct]  # (W, T)
    if wrong_rows.shape[0] == 0:
        return [0.0] * num_tests
    passed_share = wrong_rows.mean(axis=0)  # (T,)
    rewards = np.where(right, 1.0 - passed_share, -passed_share)
    return [float(r) + 0.0 for r in rewards]


def cure_test_rewards_reference(matrix: Matrix, correct: Sequence[bool]) -> list[float]:
    """Slow, literal version of :func:`cure_test_rewards` (the reference for the equivalence test)."""
    num_tests = len(matrix[0]) if matrix else 0
    correct_rows = [row for row, ok in zip(matrix, correct) if ok]
    wrong_rows = [row for row, ok in zip(matrix, correct) if not ok]
    rewards = []
    for k in range(num_tests):
        if not correct_rows or not wrong_rows:
            rewards.append(0.0)
            continue
        sign = 1 if all(row[k] for row in correct_rows) else -1
        if sign == 1:
            separated = sum(1 for row in wrong_rows if not row[k])
        else:
            separated = sum(1 for row in wrong_rows if row[k])
        rewards.append(sign * separated / len(wrong_rows))
    return rewards


def suite_kill_rate(matrix: Matrix, correct: Sequence[bool], valid: Sequence[bool | None]) -> float | None:
    """The share of wrong programs that fail at least one valid test (``None`` without wrong programs)."""
    passes, is_correct = _as_array(matrix, correct)
    wrong_rows = passes[~is_correct]
    if wrong_rows.shape[0] == 0:
        return None
    keep = np.asarray([v is True for v in valid], dtype=bool)
    if not keep.any():
        return 0.0
    return float((~wrong_rows[:, keep]).any(axis=1).mean())


def precision(
    matrix: Matrix, correct: Sequence[bool], valid: Sequence[bool | None]
) -> dict[str, float | None]:
    """CURE's diagnostics: ``p_01`` = P(a wrong program passes a right test), ``p_00`` = P(... a wrong test).

    Each is ``None`` when there is no (wrong program, test of that kind) pair.
    """
    passes, is_correct = _as_array(matrix, correct)
    wrong_rows = passes[~is_correct]
    out: dict[str, float | None] = {}
    for name, kind in (("p_01", True), ("p_00", False)):
        columns = np.asarray([v is kind for v in valid], dtype=bool)
        cells = wrong_rows[:, columns] if columns.size else wrong_rows[:, :0]
        out[name] = float(cells.mean()) if cells.size else None
    return out
