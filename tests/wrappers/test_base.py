from __future__ import annotations

import pytest

from teamgym.core.parallel import TurnParallelEnv
from teamgym.errors import EnvStateError, InvalidArgumentError, SnapshotError
from teamgym.wrappers import ProcessReward, RewardMixing, TextEnvWrapper, WrapperSnapshot
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
    assert env.rewards["speaker"] == 1.0 and "episode" not in env.infos["speaker"]
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


def test_parallel_view_of_a_wrapped_env_plays_turns():
    env = TurnParallelEnv(RewardMixing(RelayEnv(), alpha={"listener": 3.0}))
    env.reset(seed=0, options={"task_id": "apple"})
    observations, rewards, terminations, truncations, infos = env.step(
        {"speaker": "The word is apple", "listener": "apple"}
    )
    assert rewards == {"speaker": 0.0, "listener": 3.0}
    assert all(terminations.values())
