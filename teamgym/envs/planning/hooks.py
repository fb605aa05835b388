"""``FamilyHooks``: what a planning family (``plan_path``, ``sudoku``, ``sokoban``) fills in for
:class:`~teamgym.envs.planning.base.PlanningEnv`: its board, moves, progress, solver and prompt pieces."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Generic, TypeVar

import numpy as np

__all__ = ["BoardT", "FamilyHooks", "MoveT", "TaskT"]

TaskT = TypeVar("TaskT")
BoardT = TypeVar("BoardT")
MoveT = TypeVar("MoveT")


class FamilyHooks(Generic[TaskT, BoardT, MoveT]):
    """The hooks of a planning family; each raises until the family overrides it."""

    #: A one-line example of the plan format, shown in both prompts.
    plan_format: ClassVar[str] = ""

    def _initial_board(self, task: TaskT) -> BoardT:
        raise NotImplementedError

    def _rules(self) -> str:
        """The task in words: goal, symbols, moves (shown to both roles)."""
        raise NotImplementedError

    def _show(self, board: BoardT) -> str:
        """The board as text a person (and a model) can follow."""
        raise NotImplementedError

    def _preamble(self, board: BoardT) -> str:
        """Python source defining the board as variables, run before the tool's program."""
        raise NotImplementedError

    def _parse_plan(self, text: str) -> list[MoveT] | None:
        """The plan in ``text``, or ``None`` when there is no readable one."""
        raise NotImplementedError

    def _move(self, board: BoardT, move: MoveT) -> BoardT | None:
        """The board after ``move``, or ``None`` when the move is invalid."""
        raise NotImplementedError

    def _progress(self, board: BoardT) -> float:
        """Progress, at most 1: 0 on the initial board, 1 exactly at the goal (below 0 only where further from it)."""
        raise NotImplementedError

    def _solved(self, board: BoardT) -> bool:
        """Whether ``board`` is the goal: progress 1 (a family whose progress costs a search says it cheaper)."""
        return self._progress(board) >= 1.0

    def _signals(self, board: BoardT) -> dict[str, Any]:
        """The family's process signals for ``infos`` (distance to goal, cells correct, boxes on goals...)."""
        raise NotImplementedError

    def _optimal_length(self) -> int:
        """The fewest counted moves that reach the goal from the initial board."""
        raise NotImplementedError

    def _solve(self, board: BoardT) -> list[MoveT]:
        """A shortest plan from ``board`` (in process; used by the oracle planner), or [] if none exists."""
        raise NotImplementedError

    def _format_plan(self, plan: Sequence[MoveT]) -> str:
        """The plan written in the planner's answer format (``Actions: ...``)."""
        raise NotImplementedError

    def _random_plan(self, rng: np.random.Generator, board: BoardT) -> list[MoveT]:
        """A random plan, for the random policies."""
        raise NotImplementedError

    #: A correct program (run after the preamble) that prints a shortest plan: the oracle tool's code.
    oracle_program: ClassVar[str] = ""
