"""The single-agent views under Gymnasium's own wrappers and registry, and in Tianshou's buffer."""

from __future__ import annotations

import warnings

import gymnasium
import pytest
from gymnasium.wrappers import RecordEpisodeStatistics

import teamgym
from teamgym.core import EPISODE_KEY
from teamgym.errors import InvalidArgumentError
from teamgym.integrations.gym_registry import make_single_agent

# Every per-step key SingleAgentView promises (docs/wrappers.md); the env's diagnostics come on top.
ALWAYS = {
    "reward_terms",
    "cumulative_reward_terms",
    "messages",
    "turn",
    "task_id",
    "action_flags",
    "infra_error",
    EPISODE_KEY,
}


def play(env, seed):
    observation, info = env.reset(seed=seed)
    infos = [info]
    done = False
    while not done:
        observation, reward, terminated, truncated, info = env.step(env.action_space.sample())
        infos.append(info)
        done = terminated or truncated
    return infos


@pytest.mark.parametrize("env_id", teamgym.list_envs())
def test_record_episode_statistics_on_every_single_agent_view(env_id):
    agent = teamgym.make(env_id).possible_agents[-1]
    if "/" in env_id:  # a namespaced id (textarena/...): Gymnasium's ids take one namespace, so it is not registered
        assert f"teamgym/{env_id}" not in gymnasium.registry
        env = RecordEpisodeStatistics(gymnasium.wrappers.PassiveEnvChecker(make_single_agent(env_id, agent=agent)))
    else:
        env = RecordEpisodeStatistics(gymnasium.make(f"teamgym/{env_id}", agent=agent))
    infos = play(env, seed=0)
    final = infos[-1]
    assert final["episode"]["l"] == len(infos) - 1  # Gymnasium's own statistics
    assert final[EPISODE_KEY]["returns"][agent] == pytest.approx(float(final["episode"]["r"]), abs=1e-5)
    assert all(ALWAYS <= set(info) for info in infos)


def test_gymnasium_make_takes_the_role_partners_and_env_arguments():
    env = gymnasium.make("teamgym/coder_tester-v0", agent="tester", partners={"coder": "scripted"}, max_cycles=1)
    observation, info = env.reset(seed=0)
    assert env.unwrapped.agent == "tester" and env.unwrapped.env.max_turns == 1
    assert "tester" in info["messages"][0]["content"].lower()
    with pytest.raises(InvalidArgumentError, match="agent='judge'"):
        gymnasium.make("teamgym/coder_tester-v0", agent="judge")


def test_register_gymnasium_envs_adds_envs_registered_later(monkeypatch):
    from teamgym import registry

    # Both registries restored afterwards: later tests list every registered id (the catalogue's among them).
    monkeypatch.setattr(registry, "_registry", dict(registry._registry))
    monkeypatch.setattr(gymnasium.envs.registration, "registry", dict(gymnasium.registry))
    monkeypatch.setattr(gymnasium, "registry", gymnasium.envs.registration.registry)
    teamgym.register("later_relay-v0", "teamgym.envs.sanity.env:RelayEnv")
    assert teamgym.register_gymnasium_envs() == ["teamgym/later_relay-v0"]
    assert teamgym.register_gymnasium_envs() == []
    assert gymnasium.make("teamgym/later_relay-v0", agent="speaker").reset(seed=0)[1]["turn"] == 0


def test_the_old_episode_key_is_a_deprecated_alias_in_the_aec_env():
    env = teamgym.make("sanity_bandit-v0")
    env.reset(seed=0)
    env.step("a")
    info = env.infos["player"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        summary = info[EPISODE_KEY]
    with pytest.warns(FutureWarning, match="teamgym_episode"):
        assert info["episode"] is summary
    with pytest.warns(FutureWarning):
        assert info.get("episode") is summary
    assert "episode" not in gymnasium.make("teamgym/sanity_bandit-v0").reset(seed=0)[1]


# Envs whose diagnostics never hold None (a missing value to Tianshou): the others carry ``answer=None`` and the
# like while a reply could not be read.
TIANSHOU_ENVS = [
    ("sanity_two_turn-v0", "player"),
    ("coder_tester-v0", "coder"),
    ("plan_path-v0", "planner"),
    ("sudoku-v0", "planner"),
]


@pytest.mark.parametrize(("env_id", "agent"), TIANSHOU_ENVS)
def test_tianshou_buffer_takes_a_collected_episode(env_id, agent):
    data = pytest.importorskip("tianshou.data")
    env = gymnasium.make(f"teamgym/{env_id}", agent=agent, max_cycles=3)
    buffer = data.ReplayBuffer(32)
    for seed in range(2):
        observation, info = env.reset(seed=seed)
        assert ALWAYS <= set(info)
        keys = set(info)
        done = False
        while not done:
            action = env.action_space.sample()
            following, reward, terminated, truncated, info = env.step(action)
            assert keys <= set(info)  # a key never leaves (an env's diagnostics may join)
            keys = set(info)
            buffer.add(
                data.Batch(
                    obs=observation,
                    act=action,
                    rew=reward,
                    terminated=terminated,
                    truncated=truncated,
                    obs_next=following,
                    info=info,
                )
            )
            observation, done = following, terminated or truncated
    assert not buffer.hasnull()  # what Tianshou's trainer checks after each collection
    assert buffer[len(buffer) - 1].info[EPISODE_KEY]["steps"] > 0
