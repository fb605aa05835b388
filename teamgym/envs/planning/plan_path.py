"""``plan_path-v0``: shortest path on a grid with obstacles, solved by a tool agent and a planner (AT-GRPO's
``plan_path`` benchmark, Stronger-MAS, arXiv 2510.11062).

**Task.** A square grid (4x4 to 10x10) with obstacles ``#``; the team must walk from ``@`` to ``G`` with moves
``U D L R``. Grids are generated from the task id (``numpy.random.default_rng(task_id)``): random obstacles,
then a start and a goal whose breadth-first-search distance is at least the grid's side minus one (so
reachability is verified and the optimal length is known). No downloads; any int >= 0 is a task.

**Agents.** ``tool`` then ``planner`` each turn (see :mod:`teamgym.envs.planning.base` for the protocol).
The tool's program starts with::

    grid = ["..#.", ...]    # rows top to bottom; "#" obstacle, "." free
    start = (row, col)      # the current position (0-based)
    goal = (row, col)
    MOVES = {"U": (-1, 0), "D": (1, 0), "L": (0, -1), "R": (0, 1)}

and must print ``Actions: U,R,R,D``; the planner ends its answer with the same line. A move into an obstacle
or off the grid is invalid (skipped, penalised).

**Spaces.** Observation ``Dict(prompt=TextSpace(32768), turn=Discrete(max_turns + 1))``; action
``TextSpace(65536)``.

**Rewards.** As in :mod:`teamgym.envs.planning.base`:

====================  ===========  ==============================================================
term                  range        meaning
====================  ===========  ==============================================================
team                  <= 2.5       on the planner's step, to both agents: progress gain
                                   (``1 - distance / optimal_length``, below 0 further from the goal
                                   than the start: a plan that walks far away loses more than 1)
                                   + 1.0 at the goal + 0.5 if the goal took exactly ``optimal_length``
                                   moves
tool ``format``       {-0.5, 0}    no code block
tool ``exec``         {-0.5,       program failed / printed no readable plan
                      -0.25, 0}
tool ``plan``         [0, 1]       1 if its printed plan reaches the goal, else 0.5 * progress gain
                                   (v0, v1: more than 1 from a board far enough from the goal); v2: at
                                   most 0.5 short of the goal, and only what a plan is worth beyond the
                                   best plan it printed earlier in the episode (``tool_plan="best"``)
tool ``invalid``      [-1, 0]      -0.1 per invalid move in its printed plan
planner ``format``    {-0.5, 0}    no readable ``Actions:`` line
planner ``invalid``   [-1, 0]      -0.1 per invalid move applied
====================  ===========  ==============================================================

The maximum team return is 2.5 (reach the goal on a shortest path). Process signals in ``infos``:
``distance_to_goal`` (BFS distance), ``position``, ``progress``, ``moves_used``, ``optimal_length``.

**Options.** ``size`` (4..10, or ``None`` for a size drawn from the task id), ``obstacle_density`` (0 to 0.4,
default 0.2), ``ends_on_goal`` (v1: True; a plan reaches the goal only by ending on it, moves after it apply and
may leave it; v0: False, a plan stops as soon as it passes the goal), ``tool_plan`` (v2: ``"best"``; v0 and v1:
``"every_turn"``, see :mod:`teamgym.envs.planning.base`), ``max_turns`` (default 5; or ``max_cycles``, PettingZoo's
name for it), ``alpha``, ``tool_timeout`` (default 1 s, the sandbox's default), ``render_mode``.

**Scripted policies.** tool: ``oracle`` (a BFS program run in the sandbox), ``random`` (prints random moves);
planner: ``oracle`` (a shortest path from the state), ``copy_tool`` (adopts the tool's printed plan),
``random``.

**Version history.** v0: first release. v1: ``ends_on_goal=True``: a plan must end on the goal. v0 stops a plan
as soon as it passes the goal (both skip invalid moves), so there a walk that merely crosses the goal succeeds: a fixed
19-move serpentine that never reads the grid solved 61.5% of 200 4x4 tasks over 3 turns (7.5% under v1), and RL
learned to pad its plans past the goal. v2: ``tool_plan="best"``: the tool's ``plan`` term pays a plan only beyond the
best one it printed earlier in the episode; v0 and v1 pay every plan's whole worth every turn, so a planner that
stalls (``Actions:`` with no move) while the tool prints the winning plan again earns the team more (four stalled
turns on a 4x4 task: 10.0 summed over both agents against 6.0 for the goal at once), and a tool that prints one
move per turn earns more than one that prints the whole plan. Tasks, moves and prompts are v1's.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from teamgym.envs.planning.base import PlanningEnv, check_task_id
from teamgym.envs.planning.parsing import MOVE_NAMES, parse_moves
from teamgym.errors import InvalidArgumentError

__all__ = ["PlanPathEnv", "PathTask", "generate_path_task", "MIN_SIZE", "MAX_SIZE"]

MIN_SIZE, MAX_SIZE = 4, 10
MAX_DENSITY = 0.4

Cell = tuple[int, int]


@dataclass(frozen=True)
class PathTask:
    """One grid: rows of ``#``/``.``, start, goal, each cell's BFS distance to the goal (-1: unreachable)."""

    grid: tuple[str, ...]
    start: Cell
    goal: Cell
    distance: tuple[tuple[int, ...], ...]

    @property
    def optimal_length(self) -> int:
        return self.distance[self.start[0]][self.start[1]]


def _distances_to(grid: Sequence[str], goal: Cell) -> tuple[tuple[int, ...], ...]:
    """BFS distance from every cell to ``goal`` (-1 for obstacles and unreachable cells)."""
    size = len(grid)
    dist = [[-1] * size for _ in range(size)]
    dist[goal[0]][goal[1]] = 0
    queue = deque([goal])
    while queue:
        r, c = queue.popleft()
        for dr, dc in MOVE_NAMES.values():
            nr, nc = r + dr, c + dc
            if 0 <= nr < size and 0 <= nc < size and grid[nr][nc] != "#" and dist[nr][nc] < 0:
                dist[nr][nc] = dist[r][c] + 1
                queue.append((nr, nc))
    return tuple(tuple(row) for row in dist)


def generate_path_task(task_id: int, *, size: int | None = None, obstacle_density: float = 0.2) -> PathTask:
    """The grid of ``task_id``: random obstacles, start and goal at BFS distance >= side - 1.

    Deterministic: the same arguments always give the same task.
    """
    rng = np.random.default_rng(check_task_id(task_id))
    side = int(rng.integers(MIN_SIZE, MAX_SIZE + 1)) if size is None else size
    while True:
        blocked = (rng.random((side, side)) < obstacle_density).tolist()
        free = [(r, c) for r in range(side) for c in range(side) if not blocked[r][c]]
        if len(free) < 2:
            continue
        i, j = rng.choice(len(free), size=2, replace=False)
        start, goal = free[int(i)], free[int(j)]
        grid = tuple("".join("#" if cell else "." for cell in row) for row in blocked)
        distance = _distances_to(grid, goal)
        if distance[start[0]][start[1]] >= side - 1:
            return PathTask(grid, start, goal, distance)


_ORACLE = """from collections import deque

rows, cols = len(grid), len(grid[0])
parent = {start: None}
queue = deque([start])
while queue:
    cell = queue.popleft()
    if cell == goal:
        break
    for name, (dr, dc) in MOVES.items():
        r, c = cell[0] + dr, cell[1] + dc
        if 0 <= r < rows and 0 <= c < cols and grid[r][c] != "#" and (r, c) not in parent:
            parent[(r, c)] = (cell, name)
            queue.append((r, c))
path = []
cell = goal
while parent.get(cell) is not None:
    cell, name = parent[cell]
    path.append(name)
print("Actions: " + ",".join(reversed(path)))
"""


class PlanPathEnv(PlanningEnv[PathTask, Cell, str]):
    """Walk from start to goal around obstacles. See the module docstring."""

    metadata = {"name": "plan_path-v0", "render_modes": ["ansi", "human"], "is_parallelizable": True}
    plan_format = "one line `Actions: ` followed by the moves, comma-separated, e.g. `Actions: U,R,R,D`."
    oracle_program = _ORACLE

    def __init__(
        self,
        *,
        size: int | None = None,
        obstacle_density: float = 0.2,
        ends_on_goal: bool = False,
        max_turns: int = 5,
        max_cycles: int | None = None,
        alpha: float | dict[str, float] = 1.0,
        tool_timeout: float = 1.0,
        render_mode: str | None = None,
        tool_plan: str = "every_turn",
    ):
        super().__init__(max_turns=max_turns, alpha=alpha, render_mode=render_mode, tool_timeout=tool_timeout,
                         max_cycles=max_cycles, tool_plan=tool_plan)
        if size is not None and (
            isinstance(size, bool) or not isinstance(size, int) or not MIN_SIZE <= size <= MAX_SIZE
        ):
            raise InvalidArgumentError(
                f"size={size!r}: expected an int in [{MIN_SIZE}, {MAX_SIZE}], or None to draw a size per task"
            )
        if (
            isinstance(obstacle_density, bool)
            or not isinstance(obstacle_density, (int, float))
            or not (0.0 <= obstacle_density <= MAX_DENSITY)
        ):
            raise InvalidArgumentError(
                f"obstacle_density={obstacle_density!r}: expected a float in "
                f"[0, {MAX_DENSITY}] (denser grids are rarely connected), e.g. 0.2"
            )
        if not isinstance(ends_on_goal, bool):
            raise InvalidArgumentError(f"ends_on_goal={ends_on_goal!r}: expected True (plan_path-v1: a plan must end "
                                       "on the goal) or False (v0: a plan stops as soon as it passes the goal)")
        self.size = size
        self.obstacle_density = float(obstacle_density)
        self.stops_at_goal = not ends_on_goal
        version = (2 if tool_plan == "best" else 1) if ends_on_goal else 0
        self.metadata = {**self.metadata, "name": f"plan_path-v{version}"}

    def _task_from_id(self, task_id: Any) -> PathTask:
        return generate_path_task(task_id, size=self.size, obstacle_density=self.obstacle_density)

    def _initial_board(self, task: PathTask) -> Cell:
        return task.start

    def _rules(self) -> str:
        side = len(self.task.grid)
        return (
            f"Move from @ to G on this {side}x{side} grid in as few moves as possible. `#` is an obstacle, "
            "`.` is free. Rows are numbered from 0 at the top, columns from 0 at the left. "
            "Moves: U (row - 1), "
            "D (row + 1), L (column - 1), R (column + 1); a move into an obstacle or off the grid is invalid."
        )

    def _show(self, board: Cell) -> str:
        side = len(self.task.grid)
        lines = ["   " + " ".join(str(c % 10) for c in range(side))]
        for r, row in enumerate(self.task.grid):
            cells = ["@" if (r, c) == board else "G" if (r, c) == self.task.goal else ch for c, ch in enumerate(row)]
            lines.append(f"{r:>2} " + " ".join(cells))
        return "\n".join(lines)

    def _preamble(self, board: Cell) -> str:
        return (
            f"grid = {list(self.task.grid)!r}\nstart = {board!r}\ngoal = {self.task.goal!r}\nMOVES = {MOVE_NAMES!r}\n"
        )

    def _parse_plan(self, text: str) -> list[str] | None:
        return parse_moves(text, max_moves=4 * len(self.task.grid) ** 2)

    def _move(self, board: Cell, move: str) -> Cell | None:
        dr, dc = MOVE_NAMES[move]
        r, c = board[0] + dr, board[1] + dc
        side = len(self.task.grid)
        if 0 <= r < side and 0 <= c < side and self.task.grid[r][c] != "#":
            return (r, c)
        return None

    def _progress(self, board: Cell) -> float:
        return 1.0 - self.task.distance[board[0]][board[1]] / self.task.optimal_length

    def _signals(self, board: Cell) -> dict[str, Any]:
        return {"distance_to_goal": self.task.distance[board[0]][board[1]], "position": list(board)}

    def _optimal_length(self) -> int:
        return self.task.optimal_length

    def _solve(self, board: Cell) -> list[str]:
        plan: list[str] = []
        while board != self.task.goal:
            here = self.task.distance[board[0]][board[1]]
            for name in MOVE_NAMES:
                after = self._move(board, name)
                if after is not None and self.task.distance[after[0]][after[1]] == here - 1:
                    plan.append(name)
                    board = after
                    break
        return plan

    def _format_plan(self, plan: Sequence[str]) -> str:
        return "Actions: " + ",".join(plan)

    def _random_plan(self, rng: np.random.Generator, board: Cell) -> list[str]:
        length = int(rng.integers(1, 2 * len(self.task.grid) + 1))
        return [str(m) for m in rng.choice(list(MOVE_NAMES), size=length)]
