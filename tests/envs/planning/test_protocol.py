"""The tool + planner protocol and the reward table shared by the planning envs (envs/planning/base.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import teamgym
from teamgym.core.text import clip_text
from teamgym.envs.planning import base as planning_base
from teamgym.envs.planning.base import EXEC_FAILED, FORMAT_PENALTY, GOAL_BONUS, MAX_TEAM_RETURN, NO_PLAN
from teamgym.errors import InvalidArgumentError, SandboxError
from teamgym.sandbox import ExecResult
from teamgym.testing import check_env
from tests.envs.planning.support import act, play

ENV_IDS = ["plan_path-v0", "sudoku-v0", "sokoban-v0"]
#: Harder settings, so that the oracle is checked beyond the defaults too.
VARIANTS = [
    ("plan_path-v0", {"size": 10, "obstacle_density": 0.4}),
    ("sudoku-v0", {"size": 9, "difficulty": "hard"}),
    ("sokoban-v0", {"size": 8, "num_boxes": 3}),
]


def _fresh(env_id, **kwargs):
    env = teamgym.make(env_id, **kwargs)
    env.reset(seed=7)
    return env


@pytest.mark.slow
@pytest.mark.parametrize("env_id,kwargs", [(e, {}) for e in ENV_IDS] + VARIANTS)
def test_check_env_passes_in_full(env_id, kwargs):
    check_env(env_id, num_garbage=1000, env_kwargs=kwargs)


def _assert_oracle_is_perfect(env_id, kwargs, seeds, tool, planner):
    env = teamgym.make(env_id, **kwargs)
    for seed in seeds:
        episode, _ = play(env, seed, tool, planner)
        assert episode["success"] and episode["optimal"], (env_id, seed, episode)
        assert episode["team_returns"] == {"tool": MAX_TEAM_RETURN, "planner": MAX_TEAM_RETURN}, (
            env_id,
            seed,
        )
        assert episode["turns"] == 1


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_oracle_reaches_the_maximum_team_return(env_id):
    _assert_oracle_is_perfect(env_id, {}, range(10), "oracle", "copy_tool")


@pytest.mark.slow
@pytest.mark.parametrize("env_id,kwargs", [(e, {}) for e in ENV_IDS] + VARIANTS)
@pytest.mark.parametrize("planner", ["copy_tool", "oracle"])
def test_oracle_reaches_the_maximum_team_return_on_100_seeds(env_id, kwargs, planner):
    _assert_oracle_is_perfect(env_id, kwargs, range(100), "oracle", planner)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_random_policies_stay_far_below(env_id):
    env = teamgym.make(env_id)
    episodes = [play(env, seed, "random", "random")[0] for seed in range(40)]
    mean_team = sum(e["team_returns"]["planner"] for e in episodes) / len(episodes)
    assert mean_team < MAX_TEAM_RETURN / 3  # the oracle gets MAX_TEAM_RETURN on every episode
    assert sum(e["success"] for e in episodes) <= 0.3 * len(episodes)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_tool_step_scores_its_printed_plan_without_changing_the_state(env_id):
    env = _fresh(env_id)
    board = env.unwrapped.state.board
    info = act(env, env.unwrapped.scripted_policy("tool", "oracle")(env.observe("tool")))
    assert env.unwrapped.state.board == board
    assert info["reward_terms"] == {
        "team": 0.0,
        "local": 1.0,
        "format": 0.0,
        "exec": 0.0,
        "plan": 1.0,
        "invalid": 0.0,
    }
    assert info["tool_status"] == "ok" and info["tool_plan"]["reaches_goal"]


@pytest.mark.parametrize("env_id", ENV_IDS)
@pytest.mark.parametrize(
    "completion,parts",
    [
        ("I would search.", {"format": -FORMAT_PENALTY}),
        ("```python\nraise SystemExit(3)\n```", {"exec": -EXEC_FAILED}),
        ("```python\nwhile True:\n    pass\n```", {"exec": -EXEC_FAILED}),
        ("```python\nprint('thinking...')\n```", {"exec": -NO_PLAN}),
        ("```python\nprint('Actions: []')\n```", {}),
    ],
)
def test_tool_failure_modes(env_id, completion, parts):
    env = _fresh(env_id, tool_timeout=0.3)
    info = act(env, completion)
    expected = {"format": 0.0, "exec": 0.0, "plan": 0.0, "invalid": 0.0, **parts}
    assert {k: info["reward_terms"][k] for k in expected} == expected
    assert info["reward_terms"]["local"] == pytest.approx(sum(expected.values()))
    assert "infra_error" not in info


def test_tool_timeout_is_reported_as_such():
    env = _fresh("plan_path-v0", tool_timeout=0.3)
    info = act(env, "```python\nimport time\ntime.sleep(5)\n```")
    assert info["tool_status"] == "timeout"
    assert "status: timeout" in env.observe("planner")["prompt"]


def test_sandbox_infrastructure_failure_is_not_the_tools_fault(monkeypatch):
    broken = ExecResult(status="error", stderr="", returncode=None, infra_error="the fork server died")
    monkeypatch.setattr(planning_base.sandbox, "run_python", lambda *args, **kwargs: broken)
    env = _fresh("plan_path-v0")
    info = act(env, "```python\nprint('Actions: U')\n```")
    assert info["infra_error"] == "the fork server died"
    assert info["reward_terms"] == {"team": 0.0, "local": 0.0}
    assert env.infos["planner"]["infra_error"] == "the fork server died"


def test_sandbox_that_cannot_start_is_an_infrastructure_failure(monkeypatch):
    def refuse(*args, **kwargs):
        raise SandboxError("the sandbox server could not start")

    monkeypatch.setattr(planning_base.sandbox, "run_python", refuse)
    env = _fresh("sudoku-v0")
    info = act(env, "```python\nprint('Actions: []')\n```")
    assert info["infra_error"] == "the sandbox server could not start"
    assert info["reward_terms"] == {"team": 0.0, "local": 0.0}


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_planner_without_a_plan_gets_the_format_penalty(env_id):
    env = _fresh(env_id)
    act(env, "no program")
    board = env.unwrapped.state.board
    info = act(env, "I am not sure what to do.")
    assert info["reward_terms"] == {
        "team": 0.0,
        "local": -FORMAT_PENALTY,
        "format": -FORMAT_PENALTY,
        "invalid": 0.0,
    }
    assert env.unwrapped.state.board == board


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_team_term_reaches_both_agents_on_the_planner_step(env_id):
    env = _fresh(env_id)
    act(env, "no program")
    act(env, env.unwrapped.scripted_policy("planner", "oracle")(env.observe("planner")))
    assert env.infos["tool"]["reward_terms"] == {"team": MAX_TEAM_RETURN, "local": 0.0}
    assert env.rewards["tool"] == MAX_TEAM_RETURN
    assert env.infos["tool"]["team_parts"] == {"progress": 1.0, "goal": GOAL_BONUS, "optimal": 0.5}


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_an_optimal_plan_split_over_turns_keeps_every_bonus(env_id):
    env = teamgym.make(env_id, max_turns=4)
    env.reset(seed=3)
    base = env.unwrapped
    plan = base._solve(base.state.board)
    cut = len(plan) // 2
    team = []
    for chunk in (plan[:cut], plan[cut:]):
        act(env, "no program")
        team.append(act(env, base._format_plan(chunk))["reward_terms"]["team"])
    assert team[0] == pytest.approx(base._progress(base._run_plan(base._initial_board(base.task), plan[:cut]).board))
    assert sum(team) == pytest.approx(MAX_TEAM_RETURN)
    assert env.infos["planner"]["teamgym_episode"]["optimal"] and env.infos["planner"]["teamgym_episode"]["turns"] == 2


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_episode_truncates_after_max_turns(env_id):
    env = teamgym.make(env_id, max_turns=2)
    env.reset(seed=1)
    for _ in range(2):
        act(env, "no program")
        act(env, "Actions: []")
    assert all(env.truncations.values()) and not any(env.terminations.values())
    episode = env.infos["planner"]["teamgym_episode"]
    assert episode["success"] is False and episode["turns"] == 2 and episode["truncated"]
    assert set(episode) >= {"optimal", "optimal_length", "moves_used", "invalid_moves", "progress"}


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_prompts_show_the_task_the_tools_code_and_its_output(env_id):
    env = _fresh(env_id)
    assert "```python" in env.observe("tool")["prompt"] and "Actions: " in env.observe("tool")["prompt"]
    act(env, "```python\nprint('hello from the tool')\n```")
    prompt = env.observe("planner")["prompt"]
    assert "print('hello from the tool')" in prompt and "hello from the tool\n" in prompt
    assert "status: ok" in prompt
    act(env, "Actions: []")
    assert "Last turn the planner answered: 0 moves applied" in env.observe("tool")["prompt"]
    assert "turn 2 of 5" in env.observe("tool")["prompt"]


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_remembered_prompts_are_never_stale(env_id):
    """Prompts are remembered per role for their inputs. Branching like tree sampling (two actions from each node,
    then a restore to any state seen so far, in any branch or task), every observation and info message must equal
    a fresh rendering."""
    env = teamgym.make(env_id, tool_timeout=0.5)
    base = env.unwrapped
    oracle = {role: base.scripted_policy(role) for role in ("tool", "planner")}
    rng = np.random.default_rng(0)
    noise = ["Actions: U,U", "Actions: R", "Actions: []", "```python\nprint('Actions: R')\n```", "nonsense", ""]
    seen = []
    checked = 0
    for seed in range(6):
        env.reset(seed=seed, options={"task_id": seed % 3})
        for _ in range(12):
            if not env.agents or all(env.terminations[a] or env.truncations[a] for a in env.agents):
                base.restore(seen[int(rng.integers(len(seen)))])
                continue
            node = base.snapshot()
            agent = env.agent_selection
            for action in (oracle[agent](env.observe(agent)["prompt"]), noise[int(rng.integers(len(noise)))]):
                base.restore(node)
                env.step(action)
                seen.append(base.snapshot())
            if rng.random() < 0.5:
                base.restore(seen[int(rng.integers(len(seen)))])
            for a in env.agents:
                system, user = base._system_prompt(a), base._render_user_prompt(
                    a, base.state, min(base.turn, base.max_turns - 1))
                fresh = f"{system}\n\n{user}" if system else user
                assert env.observe(a)["prompt"] == clip_text(fresh, base.max_prompt_chars)
                assert env.infos[a]["messages"][1]["content"] == user
                checked += 1
    assert checked > 50


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_tasks_come_from_the_task_id(env_id):
    env = teamgym.make(env_id)
    env.reset(seed=1, options={"task_id": 42})
    first = env.unwrapped.task
    env.reset(seed=2, options={"task_id": 42})
    assert env.unwrapped.task == first
    with pytest.raises(InvalidArgumentError):
        env.reset(options={"task_id": -1})
    with pytest.raises(InvalidArgumentError):
        env.reset(options={"task_id": "seven"})


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_process_signals_are_in_infos(env_id):
    env = _fresh(env_id)
    info = act(env, "no program")
    signals = {
        "plan_path-v0": {"distance_to_goal", "position"},
        "sudoku-v0": {"cells_correct", "cells_empty", "conflicts"},
        "sokoban-v0": {"boxes_on_goals", "num_boxes", "player"},
    }[env_id]
    assert signals | {"progress", "moves_used", "invalid_moves", "optimal_length"} <= set(info)


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(["plan_path-v0", "sokoban-v0"]),
    st.integers(0, 50),
    st.lists(st.lists(st.sampled_from("UDLR"), max_size=15), min_size=1, max_size=4),
)
def test_planner_moves_follow_the_rules_and_progress_terms_add_up(env_id, seed, turns):
    env = teamgym.make(env_id, max_turns=4)
    env.reset(seed=seed)
    base = env.unwrapped
    board, expected_invalid, progress_sum = base.state.board, 0, 0.0
    for moves in turns:
        if not env.agents or any(env.terminations.values()):
            break
        act(env, "no program")
        info = act(env, "Actions: " + ",".join(moves))
        for move in moves:
            if base._progress(board) >= 1.0:
                break
            after = base._move(board, move)
            expected_invalid += after is None
            board = board if after is None else after
        progress_sum += info["team_parts"]["progress"]
        assert base.state.board == board and info["invalid_moves"] == expected_invalid
    assert progress_sum == pytest.approx(base._progress(board))
