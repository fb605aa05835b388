from __future__ import annotations

import pytest

from teamgym.core.parallel import TurnParallelEnv
from teamgym.errors import EnvStateError, InvalidArgumentError, SnapshotError
from teamgym.wrappers import ProcessReward, RewardMixing, TextEnvWrapper, TurnLimit, WrapperSnapshot
from tests.support.relay_env import RelayEnv


def test_wraps_aec_envs_only():
    with pytest.raises(InvalidArgumentError, match="AECEnv"):
        TextEnvWrapper(TurnParallelEnv(RelayEnv()))


def test_forwards_the_env_api():
    env = TextEnvWrapper(RelayEnv())
    env.reset(seed=0, options={"task_id": "apple"})
    assert env.unwrapped.task == "apple"
    assert env.scripted_policies() == {"speaker": ["oracle", "silent"], "listener": ["oracle"]}
    assert env.metadata["name"] == "relay-v0"
    assert str(env) == "TextEnvWrapper<relay-v0>"


def test_snapshot_carries_every_layer():
    env = RewardMixing(ProcessReward(RelayEnv(), lambda e, a, x: 1.0), alpha=2.0)
    env.reset(seed=0, options={"task_id": "apple"})
    env.step("The word is apple")
    snap = env.snapshot()
    assert isinstance(snap, WrapperSnapshot) and isinstance(snap.inner, WrapperSnapshot)
    env.step("apple")
    after = (dict(env.rewards), env.infos["listener"]["reward_terms"], dict(env._cumulative_rewards))
    env.restore(snap)
    assert env.rewards["speaker"] == 1.0 and "teamgym_episode" not in env.infos["speaker"]
    env.step("apple")
    assert (dict(env.rewards), env.infos["listener"]["reward_terms"], dict(env._cumulative_rewards)) == after


def test_restore_rejects_other_snapshots():
    env = RewardMixing(RelayEnv())
    env.reset(seed=0)
    with pytest.raises(SnapshotError, match="same stack"):
        env.restore(env.unwrapped.snapshot())
    other = ProcessReward(RelayEnv(), lambda e, a, x: 0.0)
    other.reset(seed=0)
    with pytest.raises(SnapshotError, match="ProcessReward"):
        env.restore(other.snapshot())


def test_step_before_reset_raises_the_envs_error():
    with pytest.raises(EnvStateError, match="reset"):
        RewardMixing(RelayEnv()).step("hi")


@pytest.mark.parametrize("wrap", [lambda env: RewardMixing(env, alpha=2.0), lambda env: TurnLimit(env, 1)],
                         ids=["reward_wrapper", "turn_limit"])
def test_wrappers_keep_the_episode_contract(wrap):
    env = wrap(RelayEnv(max_turns=1))
    with pytest.raises(EnvStateError, match=r"last\(\) called before reset\(\)"):
        env.last()
    env.reset(seed=0, options={"task_id": "river"})
    env.step("hello")
    env.step("river")  # the listener's team term: 1
    env.step(None)  # the speaker's dead step clears every reward, and the terms that explain them
    assert env.rewards["listener"] == 0.0
    assert env.infos["listener"]["reward_terms"]["team"] == 0.0
    env.step(None)
    for call in (lambda: env.step(None), env.last):
        with pytest.raises(EnvStateError, match="after the episode ended"):
            call()


def test_parallel_view_of_a_wrapped_env_plays_turns():
    env = TurnParallelEnv(RewardMixing(RelayEnv(), alpha={"listener": 3.0}))
    env.reset(seed=0, options={"task_id": "apple"})
    observations, rewards, terminations, truncations, infos = env.step(
        {"speaker": "The word is apple", "listener": "apple"}
    )
    assert rewards == {"speaker": 0.0, "listener": 3.0}
    assert all(terminations.values())
