"""coder_tester-v1: the attacks on v0's pay that v1 closes, played through the envs.

v0 pays ``team`` (a level) to both agents at every step and ``pass_rate``/``discrimination`` every turn, while the
episode lasts until the code passes the tester's latest suite: a team earns more the longer it keeps the episode
open, and a coder earns more by being wrong first.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

import teamgym
from teamgym.envs.coder_tester.policies import ground_truth_asserts

TASKS = ("HumanEval/0", "HumanEval/2", "HumanEval/53")
Policy = Callable[[object, int], str]


def _py(code: str) -> str:
    return f"```python\n{code.rstrip()}\n```"


def _oracle_coder(env, turn: int) -> str:
    return _py(env.task.solution)


def _wrong_coder(env, turn: int) -> str:
    return _py(f"def {env.task.entry_point}(*args):\n    return None\n")


def _wrong_then_right(env, turn: int) -> str:
    return _wrong_coder(env, turn) if turn == 0 else _oracle_coder(env, turn)


def _oracle_tester(env, turn: int) -> str:
    return _py(ground_truth_asserts(env))


def _stalling_tester(env, turn: int) -> str:
    """Honest tests and one that always fails: the code never passes the whole suite."""
    return _py(ground_truth_asserts(env) + "\nassert False\n")


def _play(env_id: str, task_id: str, coder: Policy, tester: Policy) -> tuple[dict[str, float], dict]:
    env = teamgym.make(env_id)
    env.reset(seed=0, options={"task_id": task_id})
    returns = dict.fromkeys(env.possible_agents, 0.0)
    summary: dict = {}
    for agent in env.agent_iter():
        _, _, terminated, truncated, info = env.last()
        summary = info.get("teamgym_episode") or summary
        if terminated or truncated:
            env.step(None)
            continue
        env.step((coder if agent == "coder" else tester)(env.unwrapped, env.unwrapped.turn))
        for name, reward in env.rewards.items():
            returns[name] += reward
    return returns, summary


@pytest.mark.parametrize("task_id", TASKS)
def test_v0_pays_a_stalling_tester_more_and_v1_does_not(task_id: str) -> None:
    honest0, _ = _play("coder_tester-v0", task_id, _oracle_coder, _oracle_tester)
    stalled0, _ = _play("coder_tester-v0", task_id, _oracle_coder, _stalling_tester)
    assert sum(stalled0.values()) > 2 * sum(honest0.values())  # the attack, on v0
    assert stalled0["tester"] > honest0["tester"] and stalled0["coder"] > honest0["coder"]
    honest1, _ = _play("coder_tester-v1", task_id, _oracle_coder, _oracle_tester)
    stalled1, summary = _play("coder_tester-v1", task_id, _oracle_coder, _stalling_tester)
    assert stalled1["tester"] < honest1["tester"] and stalled1["coder"] <= honest1["coder"]
    assert summary["success"] and summary["steps"] == 2  # right code ends the episode at the end of turn 0


@pytest.mark.parametrize("task_id", TASKS)
def test_v0_pays_a_coder_more_for_being_wrong_first_and_v1_does_not(task_id: str) -> None:
    at_once0, _ = _play("coder_tester-v0", task_id, _oracle_coder, _oracle_tester)
    later0, _ = _play("coder_tester-v0", task_id, _wrong_then_right, _oracle_tester)
    assert later0["coder"] > at_once0["coder"]
    at_once1, _ = _play("coder_tester-v1", task_id, _oracle_coder, _oracle_tester)
    later1, _ = _play("coder_tester-v1", task_id, _wrong_then_right, _oracle_tester)
    assert later1["coder"] <= at_once1["coder"] and sum(later1.values()) <= sum(at_once1.values())
    assert at_once1["coder"] == pytest.approx(2.0)  # team 1 + pass_rate 1 (on the tester's step)


@pytest.mark.parametrize("coder", [_oracle_coder, _wrong_coder, _wrong_then_right])
@pytest.mark.parametrize("tester", [_oracle_tester, _stalling_tester])
def test_v1_bounds_each_agents_episode_return(coder: Policy, tester: Policy) -> None:
    """team adds up to the final pass rate, pass_rate and discrimination to at most 1 each: no agent earns more than
    2 in an episode, however long the team keeps it open."""
    for task_id in TASKS:
        returns, _ = _play("coder_tester-v1", task_id, coder, tester)
        assert returns["coder"] <= 2.0 + 1e-9 and returns["tester"] <= 2.0 + 1e-9, (task_id, returns)


@pytest.mark.parametrize("coder", [_wrong_then_right, _wrong_coder])
def test_v1_team_terms_add_up_to_the_final_pass_rate(coder: Policy) -> None:
    env = teamgym.make("coder_tester-v1")
    env.reset(seed=0, options={"task_id": "HumanEval/0"})
    team = dict.fromkeys(env.possible_agents, 0.0)
    for agent in env.agent_iter():
        _, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        env.step((coder if agent == "coder" else _stalling_tester)(env.unwrapped, env.unwrapped.turn))
        for name in env.possible_agents:
            team[name] += env.infos[name]["reward_terms"].get("team", 0.0)
    final = env.unwrapped.state.team
    assert team == pytest.approx({"coder": final, "tester": final})


def test_v1_a_wrong_attempt_equal_to_a_mutant_does_not_remove_it_from_the_testers_matrix() -> None:
    """v1 leaves a wrong attempt unscored; deduplicating against it dropped the mutant it copied, so the tester faced
    one wrong program fewer and the same suite earned more (the team beat the oracle on 13 of 20 problems)."""
    env = teamgym.make("coder_tester-v1")
    env.reset(seed=0, options={"task_id": "HumanEval/10"})
    mutant = env.unwrapped.mutants(env.unwrapped.task)[0]
    env.step(_py(mutant))
    env.step(_oracle_tester(env.unwrapped, 0))
    info = env.infos["tester"]
    assert info["num_wrong_programs"] == len(env.unwrapped.mutants(env.unwrapped.task))
    honest = teamgym.make("coder_tester-v1")
    honest.reset(seed=0, options={"task_id": "HumanEval/10"})
    honest.step(_oracle_coder(honest.unwrapped, 0))
    honest.step(_oracle_tester(honest.unwrapped, 0))
    assert info["reward_terms"]["discrimination"] == honest.infos["tester"]["reward_terms"]["discrimination"]


@pytest.mark.parametrize("env_id", ["coder_tester-v0", "coder_tester-v1"])
@pytest.mark.parametrize("turn_order", ["coder_first", "tester_first"])
def test_tests_with_no_program_to_judge_them_on_earn_nothing_and_do_not_raise(env_id: str, turn_order: str) -> None:
    """Without a golden solution (LiveCodeBench) and before any scored attempt, the tester's matrix has no row: the
    step raised ValueError (v0 with the tester first, v1 after a wrong first attempt)."""
    from pathlib import Path

    dataset = Path(__file__).parent / "fixtures" / "livecodebench.jsonl"
    env = teamgym.make(env_id, dataset=str(dataset), turn_order=turn_order)
    env.reset(seed=0, options={"task_id": "abc001_a"})
    tests = '```json\n[{"input": "5\\n", "output": "25\\n"}, {"input": "2\\n", "output": "4\\n"}]\n```'
    for _ in range(2):
        agent = env.agent_selection
        env.step(_py("n = int(input())\nprint(n + n)") if agent == "coder" else tests)
        if agent == "tester":
            info = dict(env.infos["tester"])
    assert info["reward_terms"]["discrimination"] == 0.0 and info["reward_terms"]["validity"] == 0.0
    assert info["test_valid"] == [None, None] and info["kill_rate"] in (None, 0.0)


def test_a_snapshot_of_one_version_does_not_restore_into_another() -> None:
    """v0 and v1 pay differently: a v0 episode restored into v1 (empty ``best``) paid pass_rate again."""
    from teamgym.errors import SnapshotError

    v0, v1 = teamgym.make("coder_tester-v0"), teamgym.make("coder_tester-v1")
    v0.reset(seed=0, options={"task_id": "HumanEval/0"})
    v1.reset(seed=0, options={"task_id": "HumanEval/0"})
    with pytest.raises(SnapshotError):
        v1.unwrapped.restore(v0.unwrapped.snapshot())
    v1.unwrapped.restore(v1.unwrapped.snapshot())


def test_the_single_agent_view_hands_over_what_partners_paid_before_the_first_turn() -> None:
    """In v1 the coder's turn-0 step pays the tester the team's progress, before the tester's first turn, which a
    Gymnasium ``reset`` cannot return: the tester's first step does (it was lost)."""
    from teamgym.wrappers import SingleAgentView

    base = teamgym.make("coder_tester-v1")
    env = SingleAgentView(base, agent="tester", partners={"coder": base.unwrapped.scripted_policy("coder", "oracle")})
    env.reset(seed=0, options={"task_id": "HumanEval/0"})
    _, reward, terminated, _, info = env.step(_py("assert True"))
    assert terminated and reward == pytest.approx(1.0 + info["reward_terms"]["discrimination"])
