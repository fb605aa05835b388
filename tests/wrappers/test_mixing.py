from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teamgym.algos import BanditAlpha, StaticAlpha
from teamgym.errors import InvalidArgumentError
from teamgym.testing import check_env, play_episode
from teamgym.wrappers import RewardMixing, team_return
from tests.support.relay_env import RelayEnv
from tests.support.tally_env import TallyEnv
from tests.wrappers.envs import FACTORIES, TEST_ENVS, env_params


def _cycle(actions):
    stream = iter(actions * 100)
    return lambda agent, observation, info: next(stream)


@pytest.mark.parametrize("name", env_params())
def test_check_env_static_and_adaptive(name):
    make = FACTORIES[name]
    agents = make().possible_agents
    check_env(lambda: RewardMixing(make(), alpha={agents[0]: 0.25}), num_garbage=150, api_cycles=10)
    check_env(lambda: RewardMixing(make(), alpha=BanditAlpha(agents, seed=3)), num_garbage=150, api_cycles=10)


@settings(max_examples=25, deadline=None)
@given(
    alpha=st.floats(-3, 3, allow_nan=False), other=st.floats(-3, 3, allow_nan=False), seed=st.integers(0, 50)
)
def test_rewards_are_alpha_team_plus_local_at_every_step(alpha, other, seed):
    env = RewardMixing(TallyEnv(alpha=0.7), alpha={"alice": alpha, "bob": other})
    base = env.unwrapped
    expected_alpha = {"alice": alpha, "bob": other, "carol": 1.0}
    rows = play_episode(env, _cycle(["4", "x", "7", "2"]), seed=seed)
    for row in rows:
        for agent, reward in row["rewards"].items():
            terms = row["infos"][agent]["reward_terms"]
            assert math.isclose(reward, expected_alpha[agent] * terms["team"] + terms["local"], abs_tol=1e-9)
            assert row["infos"][agent]["alpha"] == expected_alpha[agent]
    # the wrapped env's own views are untouched: still mixed with its own alpha 0.7
    for agent, reward in base.rewards.items():
        terms = base.infos[agent]["reward_terms"]
        assert math.isclose(reward, 0.7 * terms["team"] + terms["local"], abs_tol=1e-9)


@pytest.mark.parametrize("name", sorted(TEST_ENVS))
def test_reward_terms_are_untouched(name):
    plain, mixed = TEST_ENVS[name](), RewardMixing(TEST_ENVS[name](), alpha=3.0)
    policy = ["apple", "1", "", "9"]
    a = play_episode(plain, _cycle(policy), seed=4)
    b = play_episode(mixed, _cycle(policy), seed=4)
    assert [{k: i["reward_terms"] for k, i in r["infos"].items()} for r in a] == [
        {k: i["reward_terms"] for k, i in r["infos"].items()} for r in b
    ]


def test_last_and_episode_returns_use_the_wrappers_alpha():
    env = RewardMixing(RelayEnv(), alpha={"listener": 2.0})
    env.reset(options={"task_id": "apple"})
    env.step("The word is apple")
    env.step("apple")
    assert env.rewards["listener"] == 2.0
    assert env.last()[1] == 0.0  # the speaker's turn to leave: its cumulative reward since it acted
    assert env._cumulative_rewards["listener"] == 2.0
    assert env.infos["listener"]["teamgym_episode"]["returns"] == {"speaker": 0.0, "listener": 2.0}
    assert env.unwrapped.infos["listener"]["teamgym_episode"]["returns"] == {"speaker": 0.0, "listener": 1.0}


def test_adaptive_mixer_is_updated_once_per_episode_with_the_team_return():
    updates = []

    class Recording(StaticAlpha):
        def update(self, stats):
            updates.append(dict(stats))
            super().update(stats)

    env = RewardMixing(TallyEnv(), alpha=Recording(0.5))
    play_episode(env, _cycle(["9", "1"]), seed=0)  # task 10 + seed-drawn id; play until the end
    assert len(updates) == 1
    assert set(updates[0]) == {"team_return", "success"}
    env.reset(seed=0, options={"task_id": 0})  # target 10
    env.step("9")
    env.step("1")
    assert updates[-1] == {"team_return": 1.0, "success": 1.0}
    assert env.infos["alice"]["alpha"] == 0.5


def test_alpha_is_fixed_within_an_episode_and_logged():
    mixer = BanditAlpha(["speaker", "listener"], grid=(0.0, 1.0, 2.0, 5.0), gamma=1.0, seed=0)
    env = RewardMixing(RelayEnv(), alpha=mixer)
    seen = []
    for episode in range(6):
        env.reset(seed=episode, options={"task_id": "apple"})
        start = env.alpha
        env.step("The word is apple")
        env.step("apple")
        assert env.alpha == start  # the update at the end does not change this episode's alpha
        assert env.infos["listener"]["alpha"] == start["listener"]
        assert env.rewards["listener"] == start["listener"] * 1.0
        seen.append(start["listener"])
    assert len(mixer.history) == 6
    assert len(set(seen)) > 1  # gamma=1: uniform draws over the grid


def test_update_mixer_false_leaves_the_mixer_to_the_trainer():
    mixer = StaticAlpha(1.0)
    env = RewardMixing(RelayEnv(), alpha=mixer, update_mixer=False)
    play_episode(env, _cycle(["apple"]), seed=0)
    assert mixer.history == []


def test_restore_restores_the_mixer_state():
    mixer = BanditAlpha(["speaker", "listener"], gamma=1.0, seed=0)
    env = RewardMixing(RelayEnv(), alpha=mixer)
    env.reset(seed=0, options={"task_id": "apple"})
    snap = env.snapshot()
    before = mixer.state_dict()
    env.step("The word is apple")
    env.step("apple")  # episode ends: the mixer is updated
    assert mixer.state_dict()["history"] != before["history"]
    env.restore(snap)
    assert mixer.state_dict()["history"] == before["history"]
    assert mixer.state_dict()["chosen"] == before["chosen"]


@pytest.mark.parametrize("bad", [math.nan, math.inf, "1", True])
def test_bad_alpha_raises(bad):
    with pytest.raises(InvalidArgumentError, match="alpha"):
        RewardMixing(RelayEnv(), alpha=bad)


def test_alpha_for_unknown_agent_raises():
    with pytest.raises(InvalidArgumentError, match="coder"):
        RewardMixing(RelayEnv(), alpha={"coder": 1.0})


def test_team_return_is_the_mean_over_agents():
    assert team_return({"a": 1.0, "b": 0.0}) == 0.5
    assert team_return({}) == 0.0
