from __future__ import annotations

from collections import deque

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import teamgym
from teamgym.envs.planning.base import GOAL_BONUS, INVALID_PENALTY, MAX_TEAM_RETURN
from teamgym.envs.planning.plan_path import MAX_SIZE, MIN_SIZE, generate_path_task
from teamgym.errors import InvalidArgumentError
from tests.envs.planning.support import act


def _bfs(grid, start, goal):
    seen = {start: 0}
    queue = deque([start])
    while queue:
        r, c = queue.popleft()
        for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            nxt = (r + dr, c + dc)
            if 0 <= nxt[0] < len(grid) and 0 <= nxt[1] < len(grid) and grid[nxt[0]][nxt[1]] != "#" and nxt not in seen:
                seen[nxt] = seen[(r, c)] + 1
                queue.append(nxt)
    return seen.get(goal)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 2**31 - 2),
    st.one_of(st.none(), st.integers(MIN_SIZE, MAX_SIZE)),
    st.sampled_from([0, 0.2, 0.4]),
)
def test_generator_is_solvable_and_stores_the_bfs_optimum(task_id, size, density):
    task = generate_path_task(task_id, size=size, obstacle_density=density)
    side = len(task.grid)
    assert MIN_SIZE <= side <= MAX_SIZE and (size is None or side == size)
    assert all(len(row) == side for row in task.grid)
    assert task.start != task.goal
    assert task.grid[task.start[0]][task.start[1]] == "." and task.grid[task.goal[0]][task.goal[1]] == "."
    assert task.optimal_length == _bfs(task.grid, task.start, task.goal) >= side - 1


@given(st.integers(0, 2**31 - 2))
@settings(max_examples=30, deadline=None)
def test_generator_is_deterministic_per_task_id(task_id):
    assert generate_path_task(task_id) == generate_path_task(task_id)
    assert generate_path_task(task_id, size=7) == generate_path_task(task_id, size=7)


def test_different_task_ids_give_different_grids():
    assert len({generate_path_task(i, size=6) for i in range(20)}) == 20


def _env(**kwargs):
    env = teamgym.make("plan_path-v0", size=5, **kwargs)
    env.reset(seed=0, options={"task_id": 11})
    return env


def _skip_tool(env):
    act(env, "no program")


def test_invalid_moves_are_skipped_and_penalised():
    env = _env()
    task = env.unwrapped.task
    blocked = [m for m in "UDLR" if env.unwrapped._move(task.start, m) is None]
    assert blocked, "task 11 was chosen for a start next to a wall"
    _skip_tool(env)
    info = act(env, f"Actions: {blocked[0]},{blocked[0]}")
    assert env.unwrapped.state.board == task.start
    assert info["invalid_moves"] == 2 and info["moves_used"] == 0
    assert info["reward_terms"]["invalid"] == pytest.approx(-2 * INVALID_PENALTY)
    assert info["reward_terms"]["team"] == 0.0


def test_progress_shaping_tracks_the_bfs_distance():
    env = _env()
    base = env.unwrapped
    plan = base._solve(base.task.start)
    _skip_tool(env)
    info = act(env, "Actions: " + ",".join(plan[:2]))
    optimum = base.task.optimal_length
    assert info["distance_to_goal"] == optimum - 2
    assert info["progress"] == pytest.approx(2 / optimum)
    assert info["reward_terms"]["team"] == pytest.approx(2 / optimum)
    assert info["team_parts"] == {"progress": pytest.approx(2 / optimum), "goal": 0.0, "optimal": 0.0}


def test_detour_reaches_goal_without_optimality_bonus():
    env = _env()
    base = env.unwrapped
    start = base.task.start
    step_out = next(m for m in "UDLR" if base._move(start, m) is not None)
    back = {"U": "D", "D": "U", "L": "R", "R": "L"}[step_out]
    plan = [step_out, back, *base._solve(start)]
    _skip_tool(env)
    info = act(env, "Actions: " + ",".join(plan))
    assert env.terminations["planner"]
    assert info["team_parts"]["goal"] == GOAL_BONUS and info["team_parts"]["optimal"] == 0.0
    assert info["teamgym_episode"]["success"] and not info["teamgym_episode"]["optimal"]
    assert info["teamgym_episode"]["team_returns"]["planner"] == pytest.approx(1.0 + GOAL_BONUS)


def test_shortest_path_earns_the_maximum_team_return():
    env = _env()
    _skip_tool(env)
    info = act(env, env.unwrapped.scripted_policy("planner", "oracle")(env.observe("planner")))
    assert info["teamgym_episode"]["team_returns"] == {"tool": MAX_TEAM_RETURN, "planner": MAX_TEAM_RETURN}
    assert info["teamgym_episode"]["optimal"] and info["distance_to_goal"] == 0


def test_tool_preamble_holds_the_current_position():
    env = _env()
    base = env.unwrapped
    first = base._solve(base.task.start)[0]
    _skip_tool(env)
    act(env, f"Actions: {first}")
    info = act(env, "```python\nprint(f'Actions: {start} {goal}')\n```")
    assert info["tool_status"] == "ok"
    assert str(base.state.board) in base.state.tool_output and str(base.task.goal) in base.state.tool_output


@pytest.mark.parametrize(
    "kwargs",
    [
        {"size": 3},
        {"size": 11},
        {"size": 5.0},
        {"obstacle_density": 0.5},
        {"obstacle_density": -0.1},
        {"tool_timeout": 0},
        {"max_turns": 0},
    ],
)
def test_bad_options_raise(kwargs):
    with pytest.raises(InvalidArgumentError):
        teamgym.make("plan_path-v0", **kwargs)


def test_render_shows_the_grid_after_each_move():
    env = teamgym.make("plan_path-v0", size=4, render_mode="ansi")
    env.reset(seed=1)
    _skip_tool(env)
    act(env, "Actions: U")
    text = env.render()
    assert "optimal plan:" in text and text.count("   0 1 2 3") == 2 and "@" in text and "G" in text


def test_moves_after_the_goal_are_ignored():
    env = _env()
    base = env.unwrapped
    plan = base._solve(base.task.start)
    _skip_tool(env)
    info = act(env, "Actions: " + ",".join(plan + ["U", "U", "L"]))
    assert info["moves_used"] == base.task.optimal_length and info["invalid_moves"] == 0
    assert info["teamgym_episode"]["optimal"]


def test_invalid_penalty_is_capped_at_one():
    env = _env()
    blocked = next(m for m in "UDLR" if env.unwrapped._move(env.unwrapped.task.start, m) is None)
    _skip_tool(env)
    info = act(env, "Actions: " + ",".join([blocked] * 15))
    assert info["invalid_moves"] == 15 and info["reward_terms"]["invalid"] == -1.0


def test_tool_gets_half_the_progress_of_a_partial_plan_and_pays_for_invalid_moves():
    env = _env()
    base = env.unwrapped
    plan = base._solve(base.task.start)
    blocked = next(m for m in "UDLR" if base._move(base.task.start, m) is None)
    info = act(env, f"```python\nprint('Actions: {blocked},{plan[0]},{plan[1]}')\n```")
    assert info["reward_terms"]["plan"] == pytest.approx(0.5 * 2 / base.task.optimal_length)
    assert info["reward_terms"]["invalid"] == pytest.approx(-INVALID_PENALTY)
    assert info["tool_plan"] == {"moves": 3, "invalid": 1, "reaches_goal": False}


#: A plan that ignores the grid: a serpentine over a 4x4 board, the same for every task and every turn.
SWEEP = "Actions: " + ",".join("UUULLLDRRRDLLLDRRRU")


def sweep_success(env_id: str) -> float:
    """The share of the main job's 200 held-out tasks (4x4, 3 turns) that ``SWEEP`` solves, answered every turn by the
    planner (the tool answers nothing)."""
    env = teamgym.make(env_id, size=4, max_turns=3)
    solved = 0
    for i in range(200):
        env.reset(seed=0, options={"task_id": 1_000_000 + i})
        while env.agents:
            agent = env.agent_selection
            over = env.terminations[agent] or env.truncations[agent]
            env.step(None if over else "-" if agent == "tool" else SWEEP)
        solved += bool(env.unwrapped.state.solved)
    env.close()
    return solved / 200


@pytest.mark.xfail(strict=True, reason=(
    "v0's known hole, kept as recorded (the versioning policy): a plan stops as soon as it passes the goal, so a "
    "fixed sweep that never reads the grid solves 61.5% of the main job's held-out tasks; plan_path-v1 closes it "
    "(test_v1_closes_the_sweep)"))
def test_a_plan_that_ignores_the_grid_does_not_solve_the_task():
    """The attack: every turn, both agents answer the same serpentine whatever the grid shows."""
    assert sweep_success("plan_path-v0") < 0.2


def test_v1_plans_reach_the_goal_only_by_ending_on_it():
    env = teamgym.make("plan_path-v1", size=4, max_turns=3)
    env.reset(seed=0, options={"task_id": 1_000_000})
    base = env.unwrapped
    plan = base._solve(base.task.start)
    back = {"U": "D", "D": "U", "L": "R", "R": "L"}[plan[-1]]
    _skip_tool(env)
    info = act(env, "Actions: " + ",".join([*plan, back]))  # through the goal and one step off it
    assert not base.state.solved and info["distance_to_goal"] == 1 and env.agents  # the episode goes on
    _skip_tool(env)
    info = act(env, "Actions: " + plan[-1])
    assert base.state.solved and not info["teamgym_episode"]["optimal"]  # two moves more than the optimum
    assert info["moves_used"] == base.task.optimal_length + 2


def test_v1_scores_an_exact_plan_as_v0_does():
    for env_id in ("plan_path-v0", "plan_path-v1"):
        env = teamgym.make(env_id, size=4, max_turns=3)
        env.reset(seed=0, options={"task_id": 1_000_003})
        plan = env.unwrapped._solve(env.unwrapped.task.start)
        _skip_tool(env)
        info = act(env, "Actions: " + ",".join(plan))
        assert env.unwrapped.state.solved and info["teamgym_episode"]["optimal"]


def test_v1_closes_the_sweep():
    """The attack above, on v1: the serpentine that solves 61.5% under v0 solves 7.5%."""
    assert sweep_success("plan_path-v1") < 0.1


@pytest.mark.parametrize("value", [1, "yes", None])
def test_a_bad_ends_on_goal_is_refused(value):
    with pytest.raises(InvalidArgumentError, match="ends_on_goal="):
        teamgym.make("plan_path-v0", ends_on_goal=value)
