from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import teamgym
from teamgym.envs.planning.base import INVALID_PENALTY, MAX_TEAM_RETURN
from teamgym.envs.planning.sudoku import GIVENS, generate_sudoku_task
from teamgym.envs.planning.sudoku_gen import box_side, count_solutions, solve_sudoku
from teamgym.errors import InvalidArgumentError
from tests.envs.planning.support import act


def _brute_force_count(puzzle, size):
    """Every completion of the empty cells checked against the rules (an easy 4x4 puzzle has 4^6 of them)."""
    side = box_side(size)
    empty = [i for i, d in enumerate(puzzle) if not d]

    def ok(grid):
        units = [[r * size + c for c in range(size)] for r in range(size)]
        units += [[r * size + c for r in range(size)] for c in range(size)]
        units += [
            [(br + r) * size + bc + c for r in range(side) for c in range(side)]
            for br in range(0, size, side)
            for bc in range(0, size, side)
        ]
        return all(sorted(grid[i] for i in unit) == list(range(1, size + 1)) for unit in units)

    count = 0
    for digits in itertools.product(range(1, size + 1), repeat=len(empty)):
        grid = list(puzzle)
        for i, d in zip(empty, digits, strict=True):
            grid[i] = d
        count += ok(grid)
    return count


def _is_valid_solution(grid, size):
    side = box_side(size)
    rows = [grid[r * size : (r + 1) * size] for r in range(size)]
    cols = [grid[c::size] for c in range(size)]
    boxes = [
        [grid[(br + r) * size + bc + c] for r in range(side) for c in range(side)]
        for br in range(0, size, side)
        for bc in range(0, size, side)
    ]
    return all(sorted(unit) == list(range(1, size + 1)) for unit in rows + cols + boxes)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 2), st.sampled_from([4, 9]), st.sampled_from(["easy", "medium", "hard"]))
def test_generator_gives_a_unique_solution_with_the_targeted_givens(task_id, size, difficulty):
    task = generate_sudoku_task(task_id, size=size, difficulty=difficulty)
    assert _is_valid_solution(task.solution, size)
    assert all(d in (0, s) for d, s in zip(task.puzzle, task.solution, strict=True))
    givens = sum(1 for d in task.puzzle if d)
    assert GIVENS[size][difficulty] <= givens <= GIVENS[size][difficulty] + 4
    assert count_solutions(task.puzzle, size) == 1
    assert task.optimal_length == size * size - givens


def test_uniqueness_check_agrees_with_brute_force_on_4x4():
    for task_id in range(5):
        task = generate_sudoku_task(task_id, size=4, difficulty="easy")
        assert _brute_force_count(task.puzzle, 4) == 1
    assert count_solutions([0] * 16, 4, limit=1000) == 288  # the number of 4x4 sudoku grids


def test_solver_finds_no_solution_for_clashing_givens():
    assert solve_sudoku([1, 1] + [0] * 14, 4) is None


@given(st.integers(0, 2**31 - 2))
@settings(max_examples=20, deadline=None)
def test_generator_is_deterministic_per_task_id(task_id):
    assert generate_sudoku_task(task_id, size=9) == generate_sudoku_task(task_id, size=9)


def test_different_task_ids_give_different_puzzles():
    assert len({generate_sudoku_task(i).puzzle for i in range(20)}) == 20


def _env(**kwargs):
    env = teamgym.make("sudoku-v0", **kwargs)
    env.reset(seed=0, options={"task_id": 5})
    act(env, "no program")
    return env


def _first_empty(task):
    i = task.puzzle.index(0)
    return i // task.size, i % task.size, task.solution[i]


def test_right_placement_makes_progress_and_wrong_one_does_not():
    env = _env()
    task = env.unwrapped.task
    r, c, digit = _first_empty(task)
    wrong = next(d for d in range(1, 5) if d != digit and env.unwrapped._move(task.puzzle, (r, c, d)) is not None)
    info = act(env, f"Actions: r{r + 1}c{c + 1}={wrong}")
    assert info["reward_terms"]["team"] == 0.0 and info["moves_used"] == 1 and info["cells_correct"] == 0
    act(env, "no program")
    info = act(env, f"Actions: r{r + 1}c{c + 1}={digit}")
    assert info["cells_correct"] == 1
    assert info["reward_terms"]["team"] == pytest.approx(1 / task.optimal_length)


def test_invalid_placements_are_skipped_and_penalised():
    env = _env()
    task = env.unwrapped.task
    given_cell = task.puzzle.index(next(d for d in task.puzzle if d))
    gr, gc = divmod(given_cell, 4)
    other = task.puzzle[given_cell] % 4 + 1
    info = act(env, f"Actions: r{gr + 1}c{gc + 1}={other}, r5c1=1, r1c1=7")
    assert info["invalid_moves"] == 3 and info["moves_used"] == 0
    assert info["reward_terms"]["invalid"] == pytest.approx(-3 * INVALID_PENALTY)
    assert env.unwrapped.state.board == task.puzzle


def test_whole_grid_answer_is_optimal_and_givens_cost_nothing():
    env = _env()
    task = env.unwrapped.task
    rows = [list(task.solution[r * 4 : (r + 1) * 4]) for r in range(4)]
    info = act(env, f"The solution:\nActions: {rows}")
    assert info["teamgym_episode"]["success"] and info["teamgym_episode"]["optimal"]
    assert info["moves_used"] == task.optimal_length and info["invalid_moves"] == 0
    assert info["teamgym_episode"]["team_returns"] == {"tool": MAX_TEAM_RETURN, "planner": MAX_TEAM_RETURN}


def test_overwriting_a_wrong_digit_loses_the_optimality_bonus():
    env = _env()
    task = env.unwrapped.task
    r, c, digit = _first_empty(task)
    wrong = next(d for d in range(1, 5) if d != digit and env.unwrapped._move(task.puzzle, (r, c, d)) is not None)
    act(env, f"Actions: r{r + 1}c{c + 1}={wrong}")
    act(env, "no program")
    info = act(env, env.unwrapped.scripted_policy("planner", "oracle")(env.observe("planner")))
    assert info["teamgym_episode"]["success"] and not info["teamgym_episode"]["optimal"]
    assert info["teamgym_episode"]["team_returns"]["planner"] == pytest.approx(2.0)


def test_conflicts_signal_counts_clashing_cells():
    env = _env()
    task = env.unwrapped.task
    board = env.unwrapped.state.board
    empties = [i for i, d in enumerate(task.puzzle) if not d]
    pair = next((i, j) for i, j in itertools.combinations(empties, 2) if i // 4 == j // 4)
    digit = next(d for d in range(1, 5) if all(env.unwrapped._move(board, (k // 4, k % 4, d)) for k in pair))
    info = act(env, "Actions: " + ", ".join(f"r{k // 4 + 1}c{k % 4 + 1}={digit}" for k in pair))
    assert info["conflicts"] >= 2


def test_preamble_defines_puzzle_and_board():
    env = _env()
    act(env, "Actions: []")
    info = act(env, "```python\nprint(size, box, sum(map(sum, puzzle)) > 0, board == puzzle)\n```")
    assert info["tool_status"] == "ok"
    assert env.unwrapped.state.tool_output.strip() == "4 2 True True"


@pytest.mark.parametrize("kwargs", [{"size": 6}, {"size": True}, {"difficulty": "expert"}, {"tool_timeout": -1}])
def test_bad_options_raise(kwargs):
    with pytest.raises(InvalidArgumentError):
        teamgym.make("sudoku-v0", **kwargs)


def test_render_shows_boxes():
    env = teamgym.make("sudoku-v0", size=9, render_mode="ansi")
    env.reset(seed=2)
    act(env, "no program")
    act(env, "Actions: r1c1=0")
    text = env.render()
    assert "------+-------+------" in text and "1 2 3 | 4 5 6 | 7 8 9" in text


def test_random_plan_uses_empty_cells_only():
    env = _env()
    base = env.unwrapped
    plan = base._random_plan(np.random.default_rng(0), base.state.board)
    assert all(base.task.puzzle[r * 4 + c] == 0 for r, c, _ in plan)
