"""``ProblemSource``: where a math env takes its problems from, the seeded generator or a JSONL dataset."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from teamgym.envs.math_tool.data import load_problems
from teamgym.envs.math_tool.problems import MathProblem, check_generator_options, generate_problem
from teamgym.errors import InvalidArgumentError

__all__ = ["ProblemSource"]


class ProblemSource:
    """Problems by task id: any int seeds the generator, or the ids of a dataset file.

    Args:
        difficulty: generator level 1-3, ``None`` for a level drawn from the seed (ignored with a dataset).
        families: generator families (default all; ignored with a dataset).
        dataset: path of a JSONL file (see :mod:`teamgym.envs.math_tool.data`) to use instead of the generator.
    """

    def __init__(self, *, difficulty: int | None = None, families: Sequence[str] | None = None,
                 dataset: str | Path | None = None):
        self.families = check_generator_options(difficulty, families)
        self.difficulty = difficulty
        self.dataset = None if dataset is None else str(dataset)
        self._problems: dict[int | str, MathProblem] | None = None
        if dataset is not None:
            self._problems = {p.task_id: p for p in load_problems(dataset)}

    def task_ids(self) -> tuple[int | str, ...] | None:
        """The dataset's ids in file order, or ``None`` for the generator (every int is a task)."""
        return None if self._problems is None else tuple(self._problems)

    def problem(self, task_id: Any) -> MathProblem:
        """The problem with this id (the base env has already checked dataset ids)."""
        if self._problems is not None:
            return self._problems[task_id]
        if isinstance(task_id, bool) or not isinstance(task_id, int):
            raise InvalidArgumentError(
                f"task_id={task_id!r}: procedural math problems are built from an int seed: pass an int, "
                "or give the env a dataset= file to use its ids"
            )
        return generate_problem(task_id, difficulty=self.difficulty, families=self.families)
