"""``sokoban-v1`` (and ``sokoban-v0``): push boxes onto goals in a small warehouse, solved by a tool agent and a
planner (AT-GRPO's ``sokoban`` benchmark, Stronger-MAS, arXiv 2510.11062).

**Task.** A square warehouse (5x5 to 8x8 with its walls) holding 1 to 3 boxes and as many goals; the player
walks ``U D L R`` and pushes (never pulls) boxes; the task is solved when every box is on a goal. Maps are
generated from the task id (``numpy.random.default_rng(task_id)``) by reverse play: boxes start on the goals
and the player walks at random pulling boxes; a forward breadth-first solver then verifies the map and stores
its optimal number of moves (at least ``size - 1``; no box starts on a goal). See
:mod:`teamgym.envs.planning.sokoban_gen`.

**Agents.** ``tool`` then ``planner`` each turn (see :mod:`teamgym.envs.planning.base` for the protocol). The
tool's program starts with::

    warehouse = ["######", "#_@$.#", ...]  # the current map, symbols as shown in the prompt
    player = (row, col)                    # 0-based, row 0 at the top
    boxes = [(row, col), ...]
    goals = [(row, col), ...]
    MOVES = {"U": (-1, 0), "D": (1, 0), "L": (0, -1), "R": (0, 1)}

and must print ``Actions: U,R,R,D``; the planner ends its answer with the same line. Symbols: ``#`` wall,
``_`` floor, ``.`` goal, ``$`` box, ``*`` box on a goal, ``@`` player, ``+`` player on a goal. A move into a
wall, or a push of a box into a wall or another box, is invalid (skipped, penalised). A box pushed into a
corner may make the map unsolvable; the episode then runs on until ``max_turns``.

**Spaces.** Observation ``Dict(prompt=TextSpace(32768), turn=Discrete(max_turns + 1))``; action
``TextSpace(65536)``.

**Rewards.** As in :mod:`teamgym.envs.planning.base`:

====================  ===========  ==============================================================
term                  range        meaning
====================  ===========  ==============================================================
team                  [-1, 2.5]    on the planner's step, to both agents: progress gain + 1.0 when
                                   solved + 0.5 if solved in the optimal number of moves
tool ``format``       {-0.5, 0}    no code block
tool ``exec``         {-0.5,       program failed / printed no readable plan
                      -0.25, 0}
tool ``plan``         [0, 1]       1 if its printed plan solves the map, else 0.5 * progress gain;
                                   v2: only what that is worth beyond the best plan it printed earlier
                                   in the episode (``tool_plan="best"``)
tool ``invalid``      [-1, 0]      -0.1 per invalid move in its printed plan
planner ``format``    {-0.5, 0}    no readable ``Actions:`` line
planner ``invalid``   [-1, 0]      -0.1 per invalid move applied
====================  ===========  ==============================================================

``progress`` (v1, ``progress="solution"``) is the share of a shortest solution done: ``1 - L(layout) / L0``, where
``L`` is the length of a shortest solution from the layout (the breadth-first solver, cached per layout) and ``L0``
the map's from its start; 1 when solved, 0 at the start and wherever no solution is found (a box stuck in a corner)
or the layout is further from solved than the start. So a plan that walks part of a solution earns that part (the
tool's ``plan`` term, the team's progress gain), as in ``plan_path``. In v0 (``progress="boxes"``) it is the share
of boxes on goals, which with one box is 0 until the map is solved: every failing plan then scores only its invalid
moves, and under group-normalised advantages (AT-GRPO) the tool learned to write shorter plans, which fail more
(docs/training.md). The maximum team return is 2.5. Process signals in ``infos``: ``boxes_on_goals``,
``num_boxes``, ``player``, ``progress``, ``moves_used``, ``optimal_length``.

**Options.** ``size`` (5..8, default 6), ``num_boxes`` (1..3, default 2), ``max_turns`` (default 5;
or ``max_cycles``, PettingZoo's name for it),
``alpha``, ``tool_timeout`` (default 1 s; every map's forward search visits at most 20,000 layouts, so a plain
BFS program finishes well within it), ``render_mode``, ``progress`` (``"solution"`` in v1 and v2, ``"boxes"`` in
v0), ``tool_plan`` (v2: ``"best"``; v0 and v1: ``"every_turn"``, see :mod:`teamgym.envs.planning.base`).

**Scripted policies.** tool: ``oracle`` (a BFS over player and box positions, run in the sandbox), ``random``
(prints random moves); planner: ``oracle`` (a shortest plan from the state), ``copy_tool`` (adopts the tool's
printed plan), ``random``.

**Version history.** v2: ``tool_plan="best"``: the tool's ``plan`` term pays a plan only beyond the best one it printed
earlier in the episode (v0 and v1 pay every turn, which a team farms by stalling: :mod:`teamgym.envs.planning.base`);
everything else as v1. v1: ``progress`` is the share of a shortest solution done (it was the share of boxes on
goals), in ``infos``, the team's progress gain and the tool's ``plan`` term; everything else as v0. v0: first
release.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from teamgym.envs.planning.base import PlanningEnv, check_task_id
from teamgym.envs.planning.parsing import MOVE_NAMES, parse_moves
from teamgym.envs.planning.sokoban_gen import Layout, Level, generate_sokoban, push, solve_sokoban
from teamgym.errors import InvalidArgumentError

__all__ = ["SokobanEnv", "SokobanTask", "generate_sokoban_task", "MIN_SIZE", "MAX_SIZE", "MAX_BOXES", "PROGRESS"]

MIN_SIZE, MAX_SIZE = 5, 8
MAX_BOXES = 3
#: The oracle planner's search budget from a mid-episode layout (above the generator's: any layout counts).
_SOLVE_STATES = 200_000
#: The ``progress`` option: what each measures, and the version that uses it.
PROGRESS = {"boxes": "sokoban-v0", "solution": "sokoban-v1"}
_CACHED_SEARCHES = 50_000


@dataclass(frozen=True)
class SokobanTask:
    """One warehouse: walls and goals, the start layout, and the fewest moves that solve it."""

    level: Level
    start: Layout
    optimal_length: int


def generate_sokoban_task(task_id: int, *, size: int = 6, num_boxes: int = 2) -> SokobanTask:
    """The warehouse of ``task_id`` (deterministic: the same arguments always give the same map)."""
    rng = np.random.default_rng(check_task_id(task_id))
    level, layout, optimal = generate_sokoban(rng, side=size, num_boxes=num_boxes, min_moves=size - 1)
    return SokobanTask(level, layout, optimal)


_ORACLE = """from collections import deque

wall = {(r, c) for r, line in enumerate(warehouse) for c, ch in enumerate(line) if ch == "#"}
target = frozenset(goals)
start = (player, frozenset(boxes))
parent = {start: None}
queue = deque([start])
end = None
while queue:
    state = queue.popleft()
    man, crates = state
    if crates == target:
        end = state
        break
    for name, (dr, dc) in MOVES.items():
        step = (man[0] + dr, man[1] + dc)
        if step in wall:
            continue
        moved = crates
        if step in crates:
            beyond = (step[0] + dr, step[1] + dc)
            if beyond in wall or beyond in crates:
                continue
            moved = (crates - {step}) | {beyond}
        after = (step, moved)
        if after not in parent:
            parent[after] = (state, name)
            queue.append(after)
path = []
while end is not None and parent[end] is not None:
    end, name = parent[end]
    path.append(name)
print("Actions: " + ",".join(reversed(path)))
"""


class SokobanEnv(PlanningEnv[SokobanTask, Layout, str]):
    """Push every box onto a goal. See the module docstring."""

    metadata = {"name": "sokoban-v0", "render_modes": ["ansi", "human"], "is_parallelizable": True}
    plan_format = "one line `Actions: ` followed by the moves, comma-separated, e.g. `Actions: U,R,R,D`."
    oracle_program = _ORACLE

    def __init__(
        self,
        *,
        size: int = 6,
        num_boxes: int = 2,
        max_turns: int = 5,
        max_cycles: int | None = None,
        alpha: float | dict[str, float] = 1.0,
        tool_timeout: float = 1.0,
        render_mode: str | None = None,
        tool_plan: str = "every_turn",
        progress: str = "boxes",
    ):
        super().__init__(max_turns=max_turns, alpha=alpha, render_mode=render_mode, tool_timeout=tool_timeout,
                         max_cycles=max_cycles, tool_plan=tool_plan)
        if isinstance(size, bool) or not isinstance(size, int) or not MIN_SIZE <= size <= MAX_SIZE:
            raise InvalidArgumentError(
                f"size={size!r}: expected an int in [{MIN_SIZE}, {MAX_SIZE}] (the side of the "
                "warehouse, walls included)"
            )
        if isinstance(num_boxes, bool) or not isinstance(num_boxes, int) or not 1 <= num_boxes <= MAX_BOXES:
            raise InvalidArgumentError(
                f"num_boxes={num_boxes!r}: expected an int in [1, {MAX_BOXES}] (more boxes "
                "make the solver's search too large for a quick program)"
            )
        if progress not in PROGRESS:
            raise InvalidArgumentError(
                f"progress={progress!r}: expected one of {', '.join(map(repr, PROGRESS))} ('solution': the share of "
                "a shortest solution done, sokoban-v1; 'boxes': the share of boxes on goals, sokoban-v0)"
            )
        self.size = size
        self.num_boxes = num_boxes
        self.progress = progress
        name = "sokoban-v2" if progress == "solution" and tool_plan == "best" else PROGRESS[progress]
        self.metadata = {**self.metadata, "name": name}
        # (level, layout) -> moves in a shortest solution, None if none is found (progress "solution"); a cache of
        # the searches, not episode state: snapshots and restores leave it alone, the level keys it by task.
        self._moves_left: dict[tuple[Level, Layout], int | None] = {}

    def _task_from_id(self, task_id: Any) -> SokobanTask:
        return generate_sokoban_task(task_id, size=self.size, num_boxes=self.num_boxes)

    def _initial_board(self, task: SokobanTask) -> Layout:
        return task.start

    def _rules(self) -> str:
        return (
            "Push every box ($) onto a goal (.) in as few moves as possible. You are @. Moves: U (row - 1), "
            "D (row + 1), L (column - 1), R (column + 1); walking into a box pushes it one square if the "
            "square beyond it is free. Boxes cannot be pulled. A move into a wall (#), or a push into a wall "
            "or another box, is invalid. `_` is floor, `*` a box on a goal, `+` you on a goal. Rows are "
            "numbered from 0 at the top, columns from 0 at the left. A box pushed into a corner that is not "
            "a goal is stuck."
        )

    def _rows(self, board: Layout) -> list[str]:
        level = self.task.level
        rows = []
        for r in range(level.side):
            line = []
            for c in range(level.side):
                cell = (r, c)
                goal = cell in level.goals
                if cell in level.walls:
                    line.append("#")
                elif cell in board.boxes:
                    line.append("*" if goal else "$")
                elif cell == board.player:
                    line.append("+" if goal else "@")
                else:
                    line.append("." if goal else "_")
            rows.append("".join(line))
        return rows

    def _show(self, board: Layout) -> str:
        side = self.task.level.side
        lines = ["   " + " ".join(str(c) for c in range(side))]
        lines += [f"{r:>2} " + " ".join(row) for r, row in enumerate(self._rows(board))]
        return "\n".join(lines)

    def _preamble(self, board: Layout) -> str:
        return (
            f"warehouse = {self._rows(board)!r}\nplayer = {board.player!r}\nboxes = {list(board.boxes)!r}\n"
            f"goals = {list(self.task.level.goals)!r}\nMOVES = {MOVE_NAMES!r}\n"
        )

    def _parse_plan(self, text: str) -> list[str] | None:
        return parse_moves(text, max_moves=8 * self.task.level.side**2)

    def _move(self, board: Layout, move: str) -> Layout | None:
        return push(self.task.level, board, move)

    def _boxes_on_goals(self, board: Layout) -> int:
        return sum(1 for box in board.boxes if box in self.task.level.goals)

    def _solved(self, board: Layout) -> bool:
        return self._boxes_on_goals(board) == len(board.boxes)

    def _progress(self, board: Layout) -> float:
        if self.progress == "boxes":
            return self._boxes_on_goals(board) / len(board.boxes)
        if self._solved(board):
            return 1.0
        key = (self.task.level, board)
        left = self._moves_left.get(key, -1)
        if left == -1:
            if len(self._moves_left) >= _CACHED_SEARCHES:
                self._moves_left.clear()
            plan = solve_sokoban(self.task.level, board, max_states=_SOLVE_STATES)
            left = self._moves_left[key] = None if plan is None else len(plan)
        if left is None:  # no solution (a box stuck), or none within the search budget: no progress
            return 0.0
        return max(0.0, 1.0 - left / self.task.optimal_length)

    def _signals(self, board: Layout) -> dict[str, Any]:
        return {
            "boxes_on_goals": self._boxes_on_goals(board),
            "num_boxes": len(board.boxes),
            "player": list(board.player),
        }

    def _optimal_length(self) -> int:
        return self.task.optimal_length

    def _solve(self, board: Layout) -> list[str]:
        return solve_sokoban(self.task.level, board, max_states=_SOLVE_STATES) or []

    def _format_plan(self, plan: Sequence[str]) -> str:
        return "Actions: " + ",".join(plan)

    def _random_plan(self, rng: np.random.Generator, board: Layout) -> list[str]:
        length = int(rng.integers(1, 3 * self.task.level.side + 1))
        return [str(m) for m in rng.choice(list(MOVE_NAMES), size=length)]
