from __future__ import annotations

import pytest
from pettingzoo.test import parallel_api_test

from teamgym.core import TurnParallelEnv
from teamgym.errors import InvalidActionError
from tests.support.relay_env import RelayEnv


def test_one_parallel_step_is_one_turn_applied_in_order():
    env = TurnParallelEnv(RelayEnv())
    observations, infos = env.reset(seed=0, options={"task_id": "violet"})
    assert set(observations) == {"speaker", "listener"} and "violet" in observations["speaker"]["prompt"]
    # Simultaneous decisions: the listener has not seen this turn's message, but it is applied after the speaker's.
    observations, rewards, terminations, truncations, infos = env.step({"speaker": "violet", "listener": "violet"})
    assert rewards == {"speaker": 0.0, "listener": 1.5}
    assert infos["listener"]["reward_terms"] == {"team": 1.0, "local": 0.5, "echo": 0.5}
    assert all(terminations.values())
    assert env.agents == []


def test_rewards_sum_over_the_turn_and_turn_advances():
    env = TurnParallelEnv(RelayEnv(max_turns=2))
    env.reset(seed=0, options={"task_id": "apple"})
    _, rewards, terminations, truncations, _ = env.step({"speaker": "", "listener": "pear"})
    assert rewards == {"speaker": -1.0, "listener": 0.0}
    assert env.aec_env.turn == 1 and env.agents == ["speaker", "listener"]
    _, _, terminations, truncations, _ = env.step({"speaker": "x", "listener": "y"})
    assert all(truncations.values()) and not any(terminations.values()) and env.agents == []


def test_missing_actions_raise():
    env = TurnParallelEnv(RelayEnv())
    env.reset(seed=0)
    with pytest.raises(InvalidActionError, match="listener"):
        env.step({"speaker": "hi"})


def test_pettingzoo_parallel_api():
    parallel_api_test(TurnParallelEnv(RelayEnv()), num_cycles=30)


def test_snapshot_through_parallel_view():
    env = TurnParallelEnv(RelayEnv())
    env.reset(seed=0)
    snap = env.snapshot()
    first = env.step({"speaker": "a", "listener": "b"})
    env.restore(snap)
    assert env.step({"speaker": "a", "listener": "b"}) == first
