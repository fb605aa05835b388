from __future__ import annotations

from collections import deque

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import teamgym
from teamgym.envs.planning.base import INVALID_PENALTY, MAX_TEAM_RETURN
from teamgym.envs.planning.sokoban import MAX_BOXES, MAX_SIZE, MIN_SIZE, generate_sokoban_task
from teamgym.envs.planning.sokoban_gen import Layout, Level, push, solve_sokoban
from teamgym.errors import InvalidArgumentError
from tests.envs.planning.support import act


def _play(level, layout, plan):
    for move in plan:
        layout = push(level, layout, move)
        assert layout is not None, "a solver plan never holds an invalid move"
    return layout


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 2), st.integers(MIN_SIZE, MAX_SIZE), st.integers(1, MAX_BOXES))
def test_generator_maps_are_solved_by_their_optimal_plan(task_id, size, num_boxes):
    task = generate_sokoban_task(task_id, size=size, num_boxes=num_boxes)
    level, start = task.level, task.start
    assert len(start.boxes) == len(level.goals) == num_boxes
    assert not set(start.boxes) & set(level.goals)
    assert start.player not in level.walls and not set(start.boxes) & level.walls
    assert all(
        (r, c) in level.walls for r in range(size) for c in range(size) if r in (0, size - 1) or c in (0, size - 1)
    )
    plan = solve_sokoban(level, start)
    assert len(plan) == task.optimal_length >= size - 1
    assert sorted(_play(level, start, plan).boxes) == sorted(level.goals)


def _reference_bfs_length(level, start):
    """Fewest moves to solve, by a plain BFS over (player, frozenset(boxes)) written independently."""
    goals = frozenset(level.goals)
    seen = {(start.player, frozenset(start.boxes))}
    queue = deque([(start.player, frozenset(start.boxes), 0)])
    while queue:
        player, boxes, depth = queue.popleft()
        if boxes == goals:
            return depth
        for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)):
            step = (player[0] + dr, player[1] + dc)
            if step in level.walls:
                continue
            moved = boxes
            if step in boxes:
                beyond = (step[0] + dr, step[1] + dc)
                if beyond in level.walls or beyond in boxes:
                    continue
                moved = boxes - {step} | {beyond}
            if (step, moved) not in seen:
                seen.add((step, moved))
                queue.append((step, moved, depth + 1))
    return None


def test_stored_optimum_matches_an_independent_bfs():
    for task_id in range(15):
        task = generate_sokoban_task(task_id, size=7, num_boxes=2)
        assert _reference_bfs_length(task.level, task.start) == task.optimal_length


def test_push_rules():
    walls = frozenset({(r, c) for r in range(5) for c in range(5) if r in (0, 4) or c in (0, 4)})
    level = Level(5, walls, ((1, 3),))
    layout = Layout((1, 1), ((1, 2),))
    assert push(level, layout, "R") == Layout((1, 2), ((1, 3),))
    assert push(level, Layout((1, 2), ((1, 3),)), "R") is None  # box against the wall
    assert push(level, layout, "U") is None  # into the wall
    assert push(level, Layout((2, 1), ((2, 2), (2, 3))), "R") is None  # box against a box
    assert solve_sokoban(level, Layout((1, 1), ((3, 3),))) is None  # a box in a corner is stuck


@given(st.integers(0, 2**31 - 2))
@settings(max_examples=20, deadline=None)
def test_generator_is_deterministic_per_task_id(task_id):
    assert generate_sokoban_task(task_id) == generate_sokoban_task(task_id)


def test_different_task_ids_give_different_maps():
    assert len({generate_sokoban_task(i) for i in range(20)}) >= 19


def _env(**kwargs):
    env = teamgym.make("sokoban-v0", **kwargs)
    env.reset(seed=0, options={"task_id": 3})
    act(env, "no program")
    return env


def test_blocked_moves_are_invalid_and_leave_the_state():
    env = _env()
    base = env.unwrapped
    start = base.state.board
    blocked = next(m for m in "UDLR" if base._move(start, m) is None)
    info = act(env, f"Actions: {blocked}")
    assert base.state.board == start and info["invalid_moves"] == 1
    assert info["reward_terms"]["invalid"] == pytest.approx(-INVALID_PENALTY)


def test_boxes_on_goals_drive_progress_and_the_optimal_plan_gets_everything():
    env = _env()
    base = env.unwrapped
    info = act(env, base.scripted_policy("planner", "oracle")(env.observe("planner")))
    assert info["boxes_on_goals"] == info["num_boxes"] == 2 and info["progress"] == 1.0
    assert info["teamgym_episode"]["team_returns"] == {"tool": MAX_TEAM_RETURN, "planner": MAX_TEAM_RETURN}


def test_preamble_matches_the_state():
    env = _env()
    act(env, "Actions: []")
    info = act(env, "```python\nprint(len(warehouse), player, sorted(boxes), sorted(goals))\n```")
    base = env.unwrapped
    assert info["tool_status"] == "ok"
    expected = (
        f"{base.task.level.side} {base.state.board.player} {sorted(base.state.board.boxes)} "
        f"{sorted(base.task.level.goals)}"
    )
    assert base.state.tool_output.strip() == expected


@pytest.mark.parametrize("kwargs", [{"size": 4}, {"size": 9}, {"num_boxes": 0}, {"num_boxes": 4}, {"num_boxes": 1.5}])
def test_bad_options_raise(kwargs):
    with pytest.raises(InvalidArgumentError):
        teamgym.make("sokoban-v0", **kwargs)


def test_render_uses_the_documented_symbols():
    env = teamgym.make("sokoban-v0", render_mode="ansi")
    env.reset(seed=4)
    act(env, "no program")
    act(env, "Actions: U")
    text = env.render()
    assert "$" in text and "@" in text and "#" in text and "optimal plan:" in text


def test_random_plan_moves_are_moves():
    env = _env()
    plan = env.unwrapped._random_plan(np.random.default_rng(0), env.unwrapped.state.board)
    assert plan and set(plan) <= set("UDLR")
