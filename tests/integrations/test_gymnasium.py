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


def _roles():
    return [(env_id, agent) for env_id in teamgym.list_envs() for agent in teamgym.make(env_id).possible_agents]


def _single_agent(env_id, agent, **kwargs):
    if "/" in env_id:  # namespaced ids are not registered with Gymnasium (see above)
        return make_single_agent(env_id, agent=agent, **kwargs)
    return gymnasium.make(f"teamgym/{env_id}", agent=agent, **kwargs)


def _nones(value, default):
    """The places where ``value`` holds None and ``default`` has something to put there."""
    if value is None:
        return default is not None
    if isinstance(value, list) and isinstance(default, list) and default:
        return any(_nones(item, default[0]) for item in value)
    if isinstance(value, dict) and isinstance(default, dict):
        return any(_nones(v, default[k]) for k, v in value.items() if k in default)
    return False


@pytest.mark.parametrize(("env_id", "agent"), _roles())
def test_every_info_holds_every_key_from_reset_on(env_id, agent):
    env = _single_agent(env_id, agent, max_cycles=3)
    for seed in range(2):
        infos = play(env, seed=seed)
        defaults = env.unwrapped.env.unwrapped.info_defaults(agent)
        assert ALWAYS | {"skipped_episodes"} | set(defaults) <= set(infos[0])
        assert all(set(info) == set(infos[0]) for info in infos), [sorted(set(i) ^ set(infos[0])) for i in infos]
        for info in infos:
            assert not [k for k, d in defaults.items() if _nones(info[k], d)], info
            for key, default in defaults.items():
                kind = (int, float) if type(default) in (int, float) else type(default)
                assert isinstance(info[key], kind) and (type(default) is bool) == isinstance(info[key], bool), key


def test_info_keys_keeps_the_named_keys_and_names_unknown_ones():
    env = gymnasium.make("teamgym/plan_path-v0", agent="tool", info_keys=["turn", "distance_to_goal"])
    infos = play(env, seed=0)
    assert all(set(info) == {"turn", "distance_to_goal"} for info in infos)
    with pytest.raises(InvalidArgumentError, match="'answer'"):
        gymnasium.make("teamgym/plan_path-v0", agent="tool", info_keys=["turn", "answer"]).reset(seed=0)
    with pytest.raises(InvalidArgumentError, match="collection of key names"):
        gymnasium.make("teamgym/plan_path-v0", agent="tool", info_keys="turn")


# coder_tester's per-test lists change length from step to step; Tianshou stores fixed shapes, so they stay out.
PER_TEST_LISTS = {"gt_verdicts", "test_verdicts", "test_valid", "test_rewards", "code_verdicts"}


def _growing_tests(env):
    """A tester policy writing the oracle's first test, then its first two, then three...: per-test lists grow."""
    oracle = env.unwrapped.env.unwrapped.scripted_policy("tester")
    written = []

    def act(observation):
        lines = oracle(observation).splitlines()
        asserts = [line for line in lines if line.startswith("assert")]
        written.append(len(written) + 1)
        return "```python\n" + "\n".join(asserts[: written[-1]]) + "\n```"

    return act


def _collect(data, env, policy, seeds=(0, 1)):
    buffer = data.ReplayBuffer(32)
    for seed in seeds:
        observation, info = env.reset(seed=seed)
        keys = set(info)
        done = False
        while not done:
            action = policy(observation)
            following, reward, terminated, truncated, info = env.step(action)
            assert set(info) == keys
            batch = dict(obs=observation, act=action, rew=reward, terminated=terminated, truncated=truncated)
            buffer.add(data.Batch(**batch, obs_next=following, info=info))
            observation, done = following, terminated or truncated
    return buffer


@pytest.mark.parametrize(("env_id", "agent"), _roles())
def test_tianshou_buffer_takes_a_collected_episode(env_id, agent):
    data = pytest.importorskip("tianshou.data")
    env = _single_agent(env_id, agent, max_cycles=3)
    if env_id.startswith("coder_tester-"):  # the documented recipe (docs/wrappers.md): no lists that change length
        env = _single_agent(env_id, agent, max_cycles=3, info_keys=set(env.reset(seed=0)[1]) - PER_TEST_LISTS)
    buffer = _collect(data, env, lambda observation: env.action_space.sample())
    assert not buffer.hasnull()  # what Tianshou's trainer checks after each collection
    assert buffer[len(buffer) - 1].info[EPISODE_KEY]["steps"] > 0


def test_tianshou_buffer_takes_coder_tester_infos_without_the_per_test_lists():
    data = pytest.importorskip("tianshou.data")
    buggy = {"coder": "scripted:buggy"}  # its code fails the tests: the episode runs all three turns
    full = _single_agent("coder_tester-v0", "tester", max_cycles=3, partners=buggy)
    keys = set(full.reset(seed=0)[1])
    assert PER_TEST_LISTS & keys
    with pytest.raises(ValueError, match="shape"):  # one test, then two: the lists do not fit the buffer's arrays
        _collect(data, full, _growing_tests(full), seeds=(0,))
    env = _single_agent("coder_tester-v0", "tester", max_cycles=3, partners=buggy, info_keys=keys - PER_TEST_LISTS)
    buffer = _collect(data, env, _growing_tests(env))
    assert not buffer.hasnull()
    assert {1, 2, 3} <= {int(n) for n in buffer.info["num_tests"]}
