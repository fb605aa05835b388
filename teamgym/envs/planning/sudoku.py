"""``sudoku-v0``: fill a 4x4 or 9x9 sudoku, solved by a tool agent and a planner (AT-GRPO's ``sudoku``
benchmark, Stronger-MAS, arXiv 2510.11062).

**Task.** A sudoku with a unique solution: fill every empty cell with a digit 1..size so that each row, column
and box (2x2 in a 4x4 grid, 3x3 in a 9x9) holds every digit once. Puzzles are generated from the task id
(``numpy.random.default_rng(task_id)``): a full grid by randomised backtracking, then cells removed in random
order while a solver confirms that the solution stays unique, down to the difficulty's number of givens (4x4:
easy 10, medium 7, hard 5; 9x9: easy 40, medium 32, hard 26; a puzzle keeps a few more when no cell can be
removed).

**Agents.** ``tool`` then ``planner`` each turn (see :mod:`teamgym.envs.planning.base` for the protocol). The
tool's program starts with::

    size = 4                # digits 1..size
    box = 2                 # boxes are box x box cells
    puzzle = [[1, 0, ...]]  # the givens, 0 = empty (they never change)
    board = [[1, 4, ...]]   # the current grid: givens and the team's placements so far

and must print ``Actions: `` followed by the whole grid (``Actions: [[1, 2, 3, 4], [3, 4, 1, 2], ...]``) or by
placements ``Actions: r1c2=3, r4c1=2`` (row and column from 1; digit 0 clears a cell). The planner ends its
answer the same way. A placement is invalid when it is off the grid, its digit is out of range, it changes a
given, or its digit clashes with a given in the same row, column or box; clashes with the team's own
placements are allowed (they show in ``conflicts``) so that a wrong digit can be overwritten. A placement that
leaves a cell as it is (e.g. a given repeated in a whole-grid answer) does nothing and costs nothing.

**Spaces.** Observation ``Dict(prompt=TextSpace(32768), turn=Discrete(max_turns + 1))``; action
``TextSpace(65536)``.

**Rewards.** As in :mod:`teamgym.envs.planning.base`:

====================  ===========  ==============================================================
term                  range        meaning
====================  ===========  ==============================================================
team                  [-1, 2.5]    on the planner's step, to both agents: progress gain (share of the
                                   empty cells holding their right digit) + 1.0 when solved + 0.5 if
                                   solved with one placement per empty cell
tool ``format``       {-0.5, 0}    no code block
tool ``exec``         {-0.5,       program failed / printed no readable plan
                      -0.25, 0}
tool ``plan``         [0, 1]       1 if its printed plan solves the puzzle, else 0.5 * progress gain;
                                   v1: only what that is worth beyond the best plan it printed earlier
                                   in the episode (``tool_plan="best"``)
tool ``invalid``      [-1, 0]      -0.1 per invalid placement in its printed plan
planner ``format``    {-0.5, 0}    no readable ``Actions:`` plan
planner ``invalid``   [-1, 0]      -0.1 per invalid placement applied
====================  ===========  ==============================================================

The maximum team return is 2.5. Process signals in ``infos``: ``cells_correct`` (empty cells now holding their
right digit), ``cells_empty``, ``conflicts`` (cells whose digit repeats in their row, column or box),
``progress``, ``moves_used``, ``optimal_length`` (the number of empty cells).

**Options.** ``size`` (4 or 9, default 4), ``difficulty`` (``"easy"``, ``"medium"``, ``"hard"``; default
``"medium"``), ``ends_on_goal`` (v1: True, every placement of an answer applies, the answer must leave the puzzle
solved, and an answer with more placements off the givens than the puzzle has empty cells is not a readable plan;
v0: False, an answer stops as soon as the puzzle is solved), ``tool_plan`` (v1: ``"best"``; v0: ``"every_turn"``, see
:mod:`teamgym.envs.planning.base`), ``max_turns`` (default 5; or ``max_cycles``, PettingZoo's name for it),
``alpha``, ``tool_timeout`` (default 1 s), ``render_mode``.

**Scripted policies.** tool: ``oracle`` (a backtracking solver run in the sandbox), ``random`` (prints random
placements); planner: ``oracle`` (the solution's placements), ``copy_tool`` (adopts the tool's printed plan),
``random``.

**Version history.** v0: first release. v1: ``ends_on_goal=True`` and ``tool_plan="best"``. In v0 an answer stops at
the first placement that solves the puzzle, a placement that clashes with a given is skipped, and the penalty for
invalid placements stops at -1, so one answer that tries every digit in every cell solves most puzzles without
reading them: all 288 4x4 grids as placements (32 kB) solve every puzzle, and the 16 cells x 4 digits swept up and
down (about 1 kB) 37 of 40 easy puzzles over 3 turns (v1: 0 and 0, ``tests/envs/planning/test_tool_plan_payment.py``;
under v1 the best of the 288 grids as one fixed answer solves 5 of 200 easy puzzles).
v1 also pays the tool's ``plan`` term only beyond its best earlier plan (see :mod:`teamgym.envs.planning.base`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from teamgym.envs.planning.base import PlanningEnv, check_task_id
from teamgym.envs.planning.parsing import Placement, parse_placements
from teamgym.envs.planning.sudoku_gen import box_side, generate_sudoku, peers
from teamgym.errors import InvalidArgumentError

__all__ = ["SudokuEnv", "SudokuTask", "generate_sudoku_task", "GIVENS"]

#: Givens targeted per (size, difficulty).
GIVENS: dict[int, dict[str, int]] = {
    4: {"easy": 10, "medium": 7, "hard": 5},
    9: {"easy": 40, "medium": 32, "hard": 26},
}

Board = tuple[int, ...]


@dataclass(frozen=True)
class SudokuTask:
    """One puzzle: its size, difficulty, givens and unique solution (flat tuples, row by row, 0 = empty)."""

    size: int
    difficulty: str
    puzzle: Board
    solution: Board

    @property
    def optimal_length(self) -> int:
        return self.puzzle.count(0)


def generate_sudoku_task(task_id: int, *, size: int = 4, difficulty: str = "medium") -> SudokuTask:
    """The puzzle of ``task_id`` (deterministic: the same arguments always give the same puzzle)."""
    rng = np.random.default_rng(check_task_id(task_id))
    puzzle, solution = generate_sudoku(rng, size=size, givens=GIVENS[size][difficulty])
    return SudokuTask(size, difficulty, puzzle, solution)


_ORACLE = """def candidates(grid, r, c):
    used = set(grid[r]) | {grid[i][c] for i in range(size)}
    top, left = r - r % box, c - c % box
    used |= {grid[i][j] for i in range(top, top + box) for j in range(left, left + box)}
    return [d for d in range(1, size + 1) if d not in used]


def solve(grid):
    best = None
    for r in range(size):
        for c in range(size):
            if grid[r][c] == 0:
                options = candidates(grid, r, c)
                if best is None or len(options) < len(best[2]):
                    best = (r, c, options)
    if best is None:
        return True
    r, c, options = best
    for digit in options:
        grid[r][c] = digit
        if solve(grid):
            return True
    grid[r][c] = 0
    return False


grid = [row[:] for row in puzzle]
if solve(grid):
    print("Actions:", grid)
"""


class SudokuEnv(PlanningEnv[SudokuTask, Board, Placement]):
    """Fill a sudoku. See the module docstring."""

    metadata = {"name": "sudoku-v0", "render_modes": ["ansi", "human"], "is_parallelizable": True}
    plan_format = (
        "one line `Actions: ` followed by the whole grid, e.g. `Actions: [[1, 2, 3, 4], [3, 4, 1, 2], "
        "[2, 1, 4, 3], [4, 3, 2, 1]]`, or by placements, e.g. `Actions: r1c2=3, r4c1=2` "
        "(row and column from 1)."
    )
    oracle_program = _ORACLE

    def __init__(
        self,
        *,
        size: int = 4,
        difficulty: str = "medium",
        max_turns: int = 5,
        max_cycles: int | None = None,
        alpha: float | dict[str, float] = 1.0,
        tool_timeout: float = 1.0,
        render_mode: str | None = None,
        tool_plan: str = "every_turn",
        ends_on_goal: bool = False,
    ):
        super().__init__(max_turns=max_turns, alpha=alpha, render_mode=render_mode, tool_timeout=tool_timeout,
                         max_cycles=max_cycles, tool_plan=tool_plan)
        if isinstance(size, bool) or size not in GIVENS:
            raise InvalidArgumentError(f"size={size!r}: expected 4 (2x2 boxes) or 9 (3x3 boxes)")
        if difficulty not in GIVENS[size]:
            raise InvalidArgumentError(f"difficulty={difficulty!r}: expected one of {sorted(GIVENS[size])}")
        if not isinstance(ends_on_goal, bool):
            raise InvalidArgumentError(
                f"ends_on_goal={ends_on_goal!r}: expected True (sudoku-v1: every placement applies, an answer must "
                "leave the puzzle solved and hold no more placements off the givens than empty cells) or False (v0: "
                "an answer stops as soon as the puzzle is solved)"
            )
        self.size = size
        self.difficulty = difficulty
        self.stops_at_goal = not ends_on_goal
        self.metadata = {**self.metadata, "name": "sudoku-v1" if ends_on_goal and tool_plan == "best" else "sudoku-v0"}

    def _task_from_id(self, task_id: Any) -> SudokuTask:
        return generate_sudoku_task(task_id, size=self.size, difficulty=self.difficulty)

    def _initial_board(self, task: SudokuTask) -> Board:
        return task.puzzle

    def _rules(self) -> str:
        size, side = self.size, box_side(self.size)
        return (
            f"Fill the empty cells (.) of this {size}x{size} sudoku with digits 1-{size} so that every row, "
            f"every column and every {side}x{side} box holds each digit exactly once; the solution is "
            "unique. Rows and columns are numbered from 1. Given cells cannot change. A placement rXcY=D "
            "puts digit D "
            "in row X, column Y (D = 0 clears a cell the team filled); a placement off the grid, on a given "
            "cell, or of a digit that clashes with a given in the same row, column or box is invalid. "
            "Filling "
            "each empty cell once, with its right digit, is optimal."
        )

    def _show(self, board: Board) -> str:
        size, side = self.size, box_side(self.size)
        header = "    " + " | ".join(" ".join(str(c + 1) for c in range(b, b + side)) for b in range(0, size, side))
        rule = "    " + "-+-".join("-" * (2 * side - 1) for _ in range(0, size, side))
        lines = [header]
        for r in range(size):
            if r and r % side == 0:
                lines.append(rule)
            row = [str(d) if d else "." for d in board[r * size : (r + 1) * size]]
            lines.append(f"{r + 1:>2}  " + " | ".join(" ".join(row[b : b + side]) for b in range(0, size, side)))
        return "\n".join(lines)

    def _preamble(self, board: Board) -> str:
        return (
            f"size = {self.size}\nbox = {box_side(self.size)}\n"
            f"puzzle = {_rows(self.task.puzzle, self.size)!r}\n"
            f"board = {_rows(board, self.size)!r}\n"
        )

    def _parse_plan(self, text: str) -> list[Placement] | None:
        plan = parse_placements(text, size=self.size)
        if plan is None or self.stops_at_goal:
            return plan
        # v1: no more placements off the givens than empty cells (placements on givens change nothing and are not
        # counted; two in one cell count twice), so an answer cannot try several digits per cell and keep whichever
        # solves (with every placement applied, a second digit in a cell only replaces the first).
        size, puzzle = self.size, self.task.puzzle
        filled = sum(1 for r, c, _ in plan if not (0 <= r < size and 0 <= c < size and puzzle[r * size + c]))
        return plan if filled <= puzzle.count(0) else None

    def _move(self, board: Board, move: Placement) -> Board | None:
        r, c, digit = move
        size = self.size
        if not (0 <= r < size and 0 <= c < size and 0 <= digit <= size):
            return None
        i = r * size + c
        if self.task.puzzle[i]:
            return board if digit == self.task.puzzle[i] else None
        if digit and any(self.task.puzzle[j] == digit for j in peers(size)[i]):
            return None
        return board[:i] + (digit,) + board[i + 1 :]

    def _progress(self, board: Board) -> float:
        return self._cells_correct(board) / self.task.optimal_length

    def _cells_correct(self, board: Board) -> int:
        return sum(1 for i, given in enumerate(self.task.puzzle) if not given and board[i] == self.task.solution[i])

    def _signals(self, board: Board) -> dict[str, Any]:
        neighbours = peers(self.size)
        conflicts = sum(1 for i, d in enumerate(board) if d and any(board[j] == d for j in neighbours[i]))
        return {
            "cells_correct": self._cells_correct(board),
            "cells_empty": board.count(0),
            "conflicts": conflicts,
        }

    def _optimal_length(self) -> int:
        return self.task.optimal_length

    def _solve(self, board: Board) -> list[Placement]:
        size = self.size
        return [(i // size, i % size, digit) for i, digit in enumerate(self.task.solution) if board[i] != digit]

    def _format_plan(self, plan: Sequence[Placement]) -> str:
        return "Actions: " + ", ".join(f"r{r + 1}c{c + 1}={d}" for r, c, d in plan)

    def _random_plan(self, rng: np.random.Generator, board: Board) -> list[Placement]:
        empty = [i for i, d in enumerate(self.task.puzzle) if not d]
        chosen = rng.choice(empty, size=int(rng.integers(1, len(empty) + 1)), replace=False)
        return [(int(i) // self.size, int(i) % self.size, int(rng.integers(1, self.size + 1))) for i in chosen]


def _rows(board: Board, size: int) -> list[list[int]]:
    return [list(board[r * size : (r + 1) * size]) for r in range(size)]
