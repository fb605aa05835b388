"""discussion-v0: conformance, symmetry, rounds, majority team reward, persuasion terms, oracle and random policies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import teamgym
from teamgym.envs.discussion.env import DiscussionEnv
from teamgym.errors import InvalidArgumentError
from teamgym.testing import check_env, play_episode

DATA = Path(__file__).parents[1] / "math_tool" / "data"


def _play(env: Any, policy_name: str, seed: int) -> dict[str, Any]:
    base = env.unwrapped
    env.reset(seed=seed)
    policies = {a: base.scripted_policy(a, policy_name) for a in base.possible_agents}
    summary: dict[str, Any] = {}
    for row in play_episode(env, lambda agent, obs, info: policies[agent](obs), seed=seed):
        for info in row["infos"].values():
            summary = info.get("teamgym_episode", summary)
    return summary


def _round(env: Any, *answers: str) -> None:
    for answer in answers:
        env.step(f"Reasoning... \\boxed{{{answer}}}" if answer else "no idea")


def test_check_env_passes() -> None:
    check_env("discussion-v0", num_garbage=1000)
    check_env("discussion-v0", num_garbage=200, env_kwargs={"num_agents": 2, "rounds": 0})


def test_oracle_reaches_the_maximum_team_reward_on_100_seeds() -> None:
    env = teamgym.make("discussion-v0")
    for seed in range(100):
        summary = _play(env, "oracle", seed)
        assert summary["success"] and summary["final_correct"] and summary["num_correct_final"] == 3, seed
        assert summary["team_returns"] == {"agent_0": 1.0, "agent_1": 1.0, "agent_2": 1.0}
        assert summary["returns"] == {"agent_0": 4.0, "agent_1": 4.0, "agent_2": 4.0}  # team 1 + correct x 3 rounds


def test_random_policies_stay_far_below() -> None:
    env = teamgym.make("discussion-v0")
    assert sum(_play(env, "random", seed)["success"] for seed in range(100)) <= 10


def test_agents_are_named_and_prompts_are_symmetric() -> None:
    env = teamgym.make("discussion-v0", num_agents=4, rounds=1)
    env.reset(seed=0)
    assert env.agents == ["agent_0", "agent_1", "agent_2", "agent_3"]
    prompts = [env.observe(a)["prompt"] for a in env.agents]
    for agent, prompt in zip(env.agents, prompts, strict=True):
        assert prompt == prompts[0].replace("You are agent_0,", f"You are {agent},")


def test_each_round_shows_the_previous_round_only() -> None:
    env = teamgym.make("discussion-v0", rounds=1)
    env.reset(seed=0)
    _round(env, "11", "12")
    assert "11" not in env.observe("agent_2")["prompt"].split("Problem:")[1].split("Round 0")[1]
    _round(env, "13")
    prompt = env.observe("agent_0")["prompt"]
    assert r"Your answer in round 0: \boxed{11}" in prompt
    assert r"agent_1 answered \boxed{12}" in prompt and r"agent_2 answered \boxed{13}" in prompt
    _round(env, "21")
    assert r"agent_0 answered \boxed{11}" in env.observe("agent_1")["prompt"]  # not this round's 21


def test_team_reward_is_the_final_majority_given_to_everyone_at_the_end() -> None:
    env = teamgym.make("discussion-v0", rounds=1)
    env.reset(seed=0)
    truth = env.unwrapped.task.answer
    _round(env, truth, "-1", "-2")
    assert all(env.infos[a]["reward_terms"]["team"] == 0.0 for a in env.agents)
    assert env.infos["agent_0"]["round_majority"] is None
    _round(env, truth, truth, "-2")
    assert all(env.terminations.values())
    assert all(env.infos[a]["reward_terms"]["team"] == 1.0 for a in env.agents)
    assert env.infos["agent_0"]["teamgym_episode"]["final_correct"]


def test_tie_means_no_team_answer() -> None:
    env = teamgym.make("discussion-v0", num_agents=2, rounds=0)
    env.reset(seed=0)
    _round(env, env.unwrapped.task.answer, "-1")
    assert env.infos["agent_0"]["reward_terms"]["team"] == 0.0
    assert env.infos["agent_0"]["teamgym_episode"]["final_answer"] == ""  # no team answer (a summary holds no None)


def test_switch_and_persuasion_terms() -> None:
    env = teamgym.make("discussion-v0", rounds=1, switch_weight=0.5, persuasion_weight=0.5)
    env.reset(seed=0)
    truth = env.unwrapped.task.answer
    _round(env, truth, "-1", "-1")
    _round(env, "-1")  # agent_0 talked out of the right answer by agent_1/agent_2's -1
    assert env.infos["agent_0"]["switched"] == "to_wrong"
    assert env.infos["agent_0"]["reward_terms"]["switch"] == -0.5
    _round(env, truth)  # agent_1 persuaded by agent_0's round-0 answer
    assert env.infos["agent_1"]["switched"] == "to_right"
    assert env.infos["agent_1"]["reward_terms"]["switch"] == 0.5
    _round(env, "-1")  # the round ends: persuasion credit for everyone
    terms = {a: env.infos[a]["reward_terms"] for a in env.agents}
    # agent_0 converted agent_1 (+0.5); agent_1 and agent_2 share the blame for agent_0's switch (-0.25 each).
    assert terms["agent_0"]["persuasion"] == 0.5
    assert terms["agent_1"]["persuasion"] == -0.25
    assert terms["agent_2"]["persuasion"] == -0.25
    assert terms["agent_2"]["local"] == -0.25  # wrong, no switch, persuasion only
    assert all(t["team"] == 0.0 for t in terms.values())  # final majority -1 is wrong


def test_starting_wrong_to_be_persuaded_does_not_pay_the_team() -> None:
    env = teamgym.make("discussion-v0", rounds=1)
    env.reset(seed=0)
    truth = env.unwrapped.task.answer
    _round(env, truth, truth, "-1", truth, truth, truth)
    colluding = sum(env.infos[a]["teamgym_episode"]["returns"][a] for a in env.agents)
    env.reset(seed=0)
    _round(env, *[truth] * 6)
    honest = sum(env.infos[a]["teamgym_episode"]["returns"][a] for a in env.agents)
    assert honest == 9.0 and colluding == 8.75


def test_missing_box_gets_the_format_penalty() -> None:
    env = teamgym.make("discussion-v0", format_penalty=0.2)
    env.reset(seed=0)
    _round(env, "")
    assert env.infos["agent_0"]["reward_terms"] == {"team": 0.0, "local": -0.2, "correct": 0.0, "format": -0.2,
                                                   "switch": 0.0, "persuasion": 0.0}


def test_dataset_and_seed_determinism() -> None:
    env = teamgym.make("discussion-v0", dataset=str(DATA / "math.jsonl"), num_agents=2, rounds=0)
    env.reset(options={"task_id": "test/prealgebra/1.json"})
    _round(env, r"\dfrac56", "5/6")
    assert env.infos["agent_0"]["teamgym_episode"]["success"]
    a, b = teamgym.make("discussion-v0"), teamgym.make("discussion-v0")
    a.reset(seed=9)
    b.reset(seed=9)
    assert a.unwrapped.task == b.unwrapped.task


def test_ansi_render_shows_votes_and_majority() -> None:
    env = teamgym.make("discussion-v0", num_agents=2, rounds=0, render_mode="ansi")
    env.reset(seed=0)
    truth = env.unwrapped.task.answer
    _round(env, truth, truth)
    text = env.render()
    assert "reference answer:" in text and "round 0 votes:" in text and "(correct)" in text
    assert "=== end: success=True" in text


@pytest.mark.parametrize("kwargs", [
    {"num_agents": 1}, {"num_agents": True}, {"rounds": -1}, {"rationale_chars": -5},
    {"switch_weight": -0.1}, {"persuasion_weight": float("inf")}, {"difficulty": 9},
])
def test_bad_options_raise(kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidArgumentError):
        DiscussionEnv(**kwargs)
