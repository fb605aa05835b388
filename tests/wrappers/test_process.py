from __future__ import annotations

import math

import pytest

from teamgym.errors import InvalidArgumentError
from teamgym.testing import _plain, check_env, play_episode
from teamgym.wrappers import (
    EnvProgressScorer,
    MonteCarloScorer,
    ProcessReward,
    RewardMixing,
    TextScorer,
)
from tests.support.relay_env import RelayEnv
from tests.support.tally_env import TallyEnv
from tests.wrappers.envs import FACTORIES, REGISTERED, TEST_ENVS, env_params


def _cycle(actions):
    stream = iter(actions * 100)
    return lambda agent, observation, info: next(stream)


def _length_scorer(env, agent, action):
    return len(action) / 10


def _echo_policy(observation):
    """Deterministic partner for Monte-Carlo rollouts: the first digit or word of the prompt's last line."""
    return observation["prompt"].split()[-1].strip(".")


@pytest.mark.parametrize("name", env_params())
def test_check_env_with_each_scorer(name):
    make = FACTORIES[name]
    check_env(lambda: ProcessReward(make(), _length_scorer, weight=0.5), num_garbage=150, api_cycles=10)
    check_env(
        lambda: ProcessReward(make(), TextScorer(lambda p, a: float(len(p) > len(a)))),
        num_garbage=150,
        api_cycles=10,
    )
    check_env(
        lambda: ProcessReward(make(), MonteCarloScorer(_echo_policy, num_rollouts=2, max_steps=8)),
        num_garbage=60 if name in TEST_ENVS else 10,  # rollouts of sandboxed steps are costly
        api_cycles=5 if name in TEST_ENVS else 2,
    )


def test_check_env_with_the_env_progress_signal():
    check_env(
        lambda: ProcessReward(TallyEnv(), EnvProgressScorer(), weight=2.0), num_garbage=150, api_cycles=10
    )


def test_process_term_is_weighted_and_part_of_local():
    env = ProcessReward(RewardMixing(RelayEnv(), alpha=2.0), _length_scorer, weight=0.5)
    rows = play_episode(env, _cycle(["The word is apple", "apple"]), seed=0)
    for row in rows:
        acting = row["agent"]
        terms = row["infos"][acting]["reward_terms"]
        score = len(row["action"]) / 10
        assert row["infos"][acting]["process_score"] == pytest.approx(score)
        assert terms["process"] == pytest.approx(0.5 * score)
        parts = sum(v for k, v in terms.items() if k not in ("team", "local"))
        assert terms["local"] == pytest.approx(parts)
        assert row["rewards"][acting] == pytest.approx(2.0 * terms["team"] + terms["local"])
        for other in row["infos"]:
            if other != acting:
                assert "process" not in row["infos"][other]["reward_terms"]
                assert "process_score" not in row["infos"][other]


def test_two_process_wrappers_with_one_term_add_up():
    env = ProcessReward(
        ProcessReward(RelayEnv(), lambda e, a, x: 1.0, weight=0.25), lambda e, a, x: 1.0, weight=0.5
    )
    env.reset(seed=0, options={"task_id": "apple"})
    env.step("hi")
    assert env.infos["speaker"]["reward_terms"]["process"] == 0.75
    assert env.rewards["speaker"] == 0.75


def test_scorer_sees_the_env_after_the_step():
    seen = []

    def scorer(env, agent, action):
        seen.append((agent, action, env.unwrapped.state.total))
        return 0.0

    env = ProcessReward(TallyEnv(), scorer)
    env.reset(seed=0, options={"task_id": 0})
    env.step("4")
    assert seen == [("alice", "4", 4)]


def test_text_scorer_gets_the_prompt_the_agent_acted_on():
    seen = []
    env = ProcessReward(RelayEnv(), TextScorer(lambda prompt, action: seen.append((prompt, action)) or 0.0))
    env.reset(seed=0, options={"task_id": "apple"})
    prompt = env.observe("speaker")["prompt"]
    env.step("The word is apple")
    assert seen == [(prompt, "The word is apple")]


def test_progress_delta_sums_to_the_final_progress():
    env = ProcessReward(TallyEnv(), EnvProgressScorer())
    rows = play_episode(env, _cycle(["3", "x", "2", "4", "1"]), seed=0)
    total = sum(row["infos"][row["agent"]]["process_score"] for row in rows)
    assert total == pytest.approx(rows[-1]["infos"][rows[-1]["agent"]]["progress"])


def test_progress_level_mode():
    env = ProcessReward(TallyEnv(), EnvProgressScorer(mode="level"))
    env.reset(seed=0, options={"task_id": 0})
    env.step("4")
    env.step("1")
    assert env.infos["bob"]["process_score"] == 0.5  # (4 + 1) / 10


def test_missing_progress_signal_raises_with_a_fix():
    env = ProcessReward(RelayEnv(), EnvProgressScorer())
    env.reset(seed=0)
    with pytest.raises(InvalidArgumentError, match="MonteCarloScorer"):
        env.step("hello")


@pytest.mark.parametrize("bad", [math.nan, "0.5", None])
def test_non_float_scores_raise(bad):
    env = ProcessReward(RelayEnv(), lambda e, a, x: bad)
    env.reset(seed=0)
    with pytest.raises(InvalidArgumentError, match="finite float"):
        env.step("hello")


@pytest.mark.parametrize("kwargs", [{"weight": math.inf}, {"term": "local"}, {"term": ""}, {"scorer": 3}])
def test_bad_arguments_raise(kwargs):
    args = {"scorer": _length_scorer, **kwargs}
    with pytest.raises(InvalidArgumentError):
        ProcessReward(RelayEnv(), **args)


# ---------------------------------------------------------------------- Monte-Carlo scorer
def _everything(env):
    base = env.unwrapped
    return (
        _plain(base.infos),
        dict(base.rewards),
        {a: base.observe(a) for a in base.agents},
        base.agent_selection,
        dict(base.terminations),
        dict(base.truncations),
        base.np_random.bit_generator.state,
        base.num_steps,
        list(base.history),
    )


@pytest.mark.parametrize("name", sorted(TEST_ENVS))
def test_monte_carlo_scoring_leaves_the_env_exactly_as_before(name):
    env = TEST_ENVS[name]()
    env.reset(seed=1)
    env.step("4 apple")
    before = _everything(env)
    scorer = MonteCarloScorer(lambda obs: "1", num_rollouts=3, max_steps=5)
    scorer(env, "x", "4 apple")
    assert _everything(env) == before


@pytest.mark.parametrize("name", sorted(TEST_ENVS))
def test_monte_carlo_process_reward_does_not_change_the_episode(name):
    make = TEST_ENVS[name]
    policy = _cycle(["2", "apple", "7", ""])
    plain = play_episode(make(), policy, seed=5)
    policy = _cycle(["2", "apple", "7", ""])
    scored = play_episode(
        ProcessReward(make(), MonteCarloScorer(lambda obs: "3", num_rollouts=2)), policy, seed=5
    )
    assert [r["observation"] for r in plain] == [r["observation"] for r in scored]
    assert [r["agent"] for r in plain] == [r["agent"] for r in scored]


def test_monte_carlo_values_of_known_continuations():
    env = TallyEnv()
    env.reset(seed=0, options={"task_id": 0})  # target 10
    env.step("4")
    assert MonteCarloScorer(lambda obs: "3")(env, "alice", "4") == 1.0  # 4+3+3 = 10
    assert MonteCarloScorer(lambda obs: "9")(env, "alice", "4") == -1.0  # overshoot
    assert MonteCarloScorer(lambda obs: "9", target="success")(env, "alice", "4") == 0.0
    assert MonteCarloScorer(lambda obs: "3", target="success")(env, "alice", "4") == 1.0
    assert MonteCarloScorer(lambda obs: "0", max_steps=2)(env, "alice", "4") == 0.0  # cut before any outcome


def test_monte_carlo_averages_rollouts():
    draws = iter(["6", "9"] * 10)  # rollout 1 solves (4+6), rollout 2 overshoots (4+9)
    env = TallyEnv()
    env.reset(seed=0, options={"task_id": 0})
    env.step("4")
    assert MonteCarloScorer(lambda obs: next(draws), num_rollouts=2)(env, "alice", "4") == 0.0


def test_monte_carlo_value_of_a_finished_episode_is_its_last_step():
    env = TallyEnv()
    env.reset(seed=0, options={"task_id": 0})
    env.step("9")
    env.step("1")
    assert MonteCarloScorer(lambda obs: "0")(env, "bob", "1") == 1.0
    assert MonteCarloScorer(lambda obs: "0", target="success")(env, "bob", "1") == 1.0


def test_monte_carlo_policy_per_agent():
    env = TallyEnv()
    env.reset(seed=0, options={"task_id": 0})
    env.step("4")
    with pytest.raises(InvalidArgumentError, match="no policy for"):
        MonteCarloScorer({"alice": lambda obs: "1"})(env, "alice", "4")
    policies = {"alice": lambda obs: "0", "bob": lambda obs: "6", "carol": lambda obs: "0"}
    assert MonteCarloScorer(policies)(env, "alice", "4") == 1.0


@pytest.mark.parametrize("kwargs", [{"num_rollouts": 0}, {"max_steps": 0}, {"target": "win"}, {"policy": 3}])
def test_monte_carlo_bad_arguments_raise(kwargs):
    args = {"policy": lambda obs: "", **kwargs}
    with pytest.raises(InvalidArgumentError):
        MonteCarloScorer(**args)


@pytest.mark.parametrize("env_id", [n for n in ("plan_path-v0", "sudoku-v0") if n in REGISTERED])
@pytest.mark.parametrize("planner", ["oracle", "random"])
def test_planning_envs_report_the_progress_signal(env_id, planner):
    env = ProcessReward(REGISTERED[env_id](), EnvProgressScorer())
    base = env.unwrapped
    policies = {"tool": base.scripted_policy("tool"), "planner": base.scripted_policy("planner", planner)}
    env.reset(seed=1)
    total, last = 0.0, 0.0
    while env.agents:
        agent = env.agent_selection
        if env.terminations[agent] or env.truncations[agent]:
            env.step(None)
            continue
        env.step(policies[agent](env.observe(agent)))
        total += env.infos[agent]["process_score"]
        last = env.infos[agent]["progress"]
        assert 0.0 <= last <= 1.0
    assert total == pytest.approx(last)  # the deltas add up to the progress made
