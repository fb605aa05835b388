"""The tool's ``plan`` term, paid every turn (plan_path-v0/v1, sokoban-v0/v1, sudoku-v0) or beyond the tool's best
plan so far (plan_path-v2, sokoban-v2, sudoku-v1): the attacks on the first, and that the second closes them.

The attacks, as a policy would find them: (1) the planner stalls (``Actions:`` with no move) while the tool prints a
winning plan every turn, then solves at the last turn; (2) the tool prints one move of the plan per turn (the planner
copies it), so that it is paid for every part and again for the last.
"""

from __future__ import annotations

import itertools

import pytest

import teamgym
from teamgym.envs.planning.sudoku_gen import solve_sudoku
from teamgym.errors import InvalidArgumentError
from tests.envs.planning.support import act

SETTINGS = {"plan_path": {"size": 4}, "sokoban": {"size": 6, "num_boxes": 1}, "sudoku": {}}
PAIRS = [("plan_path-v1", "plan_path-v2"), ("sokoban-v1", "sokoban-v2"), ("sudoku-v0", "sudoku-v1")]


def _printed(plan_text: str) -> str:
    return f"```python\nprint({plan_text!r})\n```"


def _play(env_id: str, task_id: int, planner, tool=None) -> dict[str, float]:
    """Returns of one episode whose tool prints ``tool(env, turn)`` (default: a shortest plan from the board) and
    whose planner answers ``planner(env, turn)``."""
    env = teamgym.make(env_id, max_turns=5, **SETTINGS[env_id.split("-")[0]])
    env.reset(seed=0, options={"task_id": task_id})
    base = env.unwrapped
    turn = 0
    while not _over(env):
        act(env, _printed((tool or _solve_now)(base, turn)))
        act(env, planner(base, turn))
        turn += 1
    assert base.state.solved
    return env.unwrapped.episode_summary()["returns"]


def _over(env) -> bool:
    return env.terminations["planner"] or env.truncations["planner"]


def _solve_now(base, turn: int) -> str:
    return base._format_plan(base._solve(base.state.board))


def _stall_then_solve(base, turn: int) -> str:
    return _solve_now(base, turn) if turn == base.max_turns - 1 else "Actions: []"


def _one_move_a_turn(base, turn: int) -> str:
    plan = base._solve(base.state.board)
    return base._format_plan(plan if turn == base.max_turns - 1 else plan[:1])


def _copy_the_tool(base, turn: int) -> str:
    return base.state.tool_output


@pytest.mark.parametrize("old, new", PAIRS)
def test_stalling_pays_the_team_under_every_turn_and_not_under_best(old, new):
    fast, stalled = _play(old, 3, _solve_now), _play(old, 3, _stall_then_solve)
    assert stalled["tool"] > fast["tool"] + 3.0  # the attack: four more winning plans paid
    assert sum(stalled.values()) > sum(fast.values())  # what a team-summed estimator (grpo, rloo...) learns
    fast, stalled = _play(new, 3, _solve_now), _play(new, 3, _stall_then_solve)
    assert stalled["tool"] == pytest.approx(fast["tool"])
    assert sum(stalled.values()) <= sum(fast.values()) + 1e-9


@pytest.mark.parametrize("old, new", PAIRS[:1])
def test_splitting_a_plan_over_turns_pays_the_tool_only_under_every_turn(old, new):
    task = next(t for t in itertools.count(10) if _optimal(old, t) >= 3)
    whole = _play(old, task, _copy_the_tool)
    split = _play(old, task, _copy_the_tool, tool=_one_move_a_turn)  # the tool prints one move a turn
    assert split["tool"] > whole["tool"]  # the attack, even for an estimator that scores the tool alone
    whole = _play(new, task, _copy_the_tool)
    split = _play(new, task, _copy_the_tool, tool=_one_move_a_turn)
    assert split["tool"] <= whole["tool"] + 1e-9


def _optimal(env_id: str, task_id: int) -> int:
    env = teamgym.make(env_id, **SETTINGS[env_id.split("-")[0]])
    env.reset(seed=0, options={"task_id": task_id})
    return env.unwrapped.task.optimal_length


def test_best_pays_each_plan_beyond_the_best_so_far():
    env = teamgym.make("plan_path-v2", size=4, max_turns=5)
    env.reset(seed=0, options={"task_id": next(t for t in itertools.count(10) if _optimal("plan_path-v2", t) >= 3)})
    base = env.unwrapped
    plan = base._solve(base.state.board)
    worth = 0.5 / base.task.optimal_length  # one move of the plan: half its progress
    act(env, _printed(base._format_plan(plan[:1])))
    assert env.infos["tool"]["reward_terms"]["plan"] == pytest.approx(worth)
    act(env, "Actions: []")
    act(env, _printed(base._format_plan(plan[:1])))  # the same plan again: nothing more
    assert env.infos["tool"]["reward_terms"]["plan"] == 0.0
    act(env, "Actions: []")
    act(env, _printed(base._format_plan(plan)))  # the whole plan: the rest of its worth
    assert env.infos["tool"]["reward_terms"]["plan"] == pytest.approx(1.0 - worth)


@pytest.mark.parametrize("value", ["always", None, 1])
def test_a_bad_tool_plan_is_refused(value):
    with pytest.raises(InvalidArgumentError, match="tool_plan="):
        teamgym.make("plan_path-v2", tool_plan=value)


# ---------------------------------------------------------------------------------------------------- sudoku-v1
def _grids(size: int = 4) -> list[tuple[int, ...]]:
    """Every valid 4x4 sudoku grid (288)."""
    rows = [p for p in itertools.permutations(range(1, size + 1))]
    out = []
    for grid in itertools.product(rows, repeat=size):
        cells = tuple(d for row in grid for d in row)
        if solve_sudoku(cells, size) == cells:
            out.append(cells)
    return out


def _placements(cells) -> list[str]:
    return [f"r{i // 4 + 1}c{i % 4 + 1}={d}" for i, d in enumerate(cells)]


def _solved_by_fixed_answer(env_id: str, answer: str, tasks: range, difficulty: str = "medium") -> int:
    env = teamgym.make(env_id, max_turns=3, difficulty=difficulty)
    solved = 0
    for task_id in tasks:
        env.reset(seed=0, options={"task_id": task_id})
        while not _over(env):
            act(env, _printed("Actions: []"))
            act(env, answer)
        solved += env.unwrapped.state.solved
    return solved


def test_every_grid_in_one_answer_solves_every_sudoku_v0_and_none_of_v1():
    """All 288 grids as placements (32 kB, within the action limit): v0 stops at the first that fits."""
    answer = "Actions: " + ", ".join(p for cells in _grids() for p in _placements(cells))
    assert len(answer) < 65_536
    assert _solved_by_fixed_answer("sudoku-v0", answer, range(20)) == 20
    assert _solved_by_fixed_answer("sudoku-v1", answer, range(20)) == 0


def test_every_digit_in_every_cell_solves_sudoku_v0_and_not_v1():
    sweep = [f"r{r}c{c}={d}" for r in range(1, 5) for c in range(1, 5) for d in range(1, 5)]
    answer = "Actions: " + ", ".join(sweep + sweep[::-1])
    assert _solved_by_fixed_answer("sudoku-v0", answer, range(40), "easy") >= 30
    assert _solved_by_fixed_answer("sudoku-v1", answer, range(40), "easy") == 0


def test_sudoku_v1_reads_no_more_placements_than_empty_cells_and_a_whole_grid():
    env = teamgym.make("sudoku-v1", max_turns=3)
    env.reset(seed=0, options={"task_id": 5})
    base = env.unwrapped
    solution = base.task.solution
    empty = [i for i, d in enumerate(base.task.puzzle) if not d]
    one_more = [f"r{empty[0] // 4 + 1}c{empty[0] % 4 + 1}={solution[empty[0]] % 4 + 1}"]
    too_many = "Actions: " + ", ".join(one_more + [p for i, p in enumerate(_placements(solution)) if i in empty])
    assert base._parse_plan(too_many) is None  # a second placement in one of the empty cells
    grid = "Actions: " + str([list(solution[r * 4:(r + 1) * 4]) for r in range(4)])
    assert base._parse_plan(grid) is not None  # the givens repeated cost nothing and are not counted
    act(env, _printed("Actions: []"))
    info = act(env, grid)
    assert base.state.solved and info["teamgym_episode"]["optimal"]



@pytest.mark.parametrize("env_id, worth", [("plan_path-v1", None), ("plan_path-v2", 0.5)])
def test_best_caps_a_plan_short_of_the_goal_at_half(env_id, worth):
    """plan_path's progress falls below 0 away from the goal: from far enough, a plan one move short of the goal was
    worth more than reaching it (0.5 x a gain above 2)."""
    env = teamgym.make(env_id, size=8, max_turns=5)
    for task_id in range(400):
        env.reset(seed=0, options={"task_id": task_id})
        base = env.unwrapped
        task = base.task
        cells = [(r, c) for r in range(8) for c in range(8) if task.grid[r][c] != "#" and task.distance[r][c] >= 0]
        far = max(cells, key=lambda cell: task.distance[cell[0]][cell[1]])
        if task.distance[far[0]][far[1]] >= 2 * task.optimal_length + 3:
            break
    else:
        pytest.skip("no task with a board that far from its goal")
    base.state.board = far  # as if the planner had walked there
    act(env, _printed(base._format_plan(base._solve(far)[:-1])))  # all but the last move
    paid = env.infos["tool"]["reward_terms"]["plan"]
    assert paid == pytest.approx(worth) if worth is not None else paid > 1.0
