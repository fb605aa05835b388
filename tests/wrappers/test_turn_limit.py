from __future__ import annotations

import pytest

from teamgym.errors import InvalidActionError, InvalidArgumentError
from teamgym.testing import check_env, play_episode
from teamgym.wrappers import RewardMixing, TurnLimit
from tests.support.relay_env import RelayEnv
from tests.support.tally_env import TallyEnv
from tests.wrappers.envs import FACTORIES, env_params


def _cycle(actions):
    stream = iter(actions * 100)
    return lambda agent, observation, info: next(stream)


@pytest.mark.parametrize("name", env_params())
@pytest.mark.parametrize("max_turns", [1, 2])
def test_check_env(name, max_turns):
    check_env(lambda: TurnLimit(FACTORIES[name](), max_turns), num_garbage=150, api_cycles=10)


@pytest.mark.parametrize("limit", [1, 2, 3])
def test_episodes_end_after_max_turns(limit):
    env = TurnLimit(TallyEnv(max_turns=5), limit)
    rows = play_episode(env, _cycle(["0"]), seed=0)
    assert max(row["infos"][row["agent"]]["turn"] for row in rows) == limit
    assert len(rows) == 3 * limit
    final = rows[-1]["infos"]
    assert all(info["teamgym_episode"]["truncated"] for info in final.values())
    assert not env.agents  # every agent left by a dead step


def test_summary_and_last_views():
    env = TurnLimit(RewardMixing(RelayEnv(max_turns=3), alpha={"speaker": 2.0}), 1)
    env.reset(seed=0, options={"task_id": "apple"})
    env.step("")  # speaker: format -1
    env.step("pear")
    summary = env.infos["speaker"]["teamgym_episode"]
    assert summary["truncated"] and not summary["success"] and summary["task_id"] == "apple"
    assert summary["returns"] == {"speaker": -1.0, "listener": 0.0}
    assert env.truncations == {"speaker": True, "listener": True}
    assert env.last()[3] is True
    assert not env.unwrapped.truncations["speaker"]  # the wrapped env is left as it is
    with pytest.raises(InvalidActionError, match="None"):
        env.step("more")
    env.step(None)
    env.step(None)
    assert env.agents == [] and env.rewards == {}


def test_a_limit_above_the_envs_changes_nothing():
    plain = play_episode(RelayEnv(max_turns=2), _cycle(["x"]), seed=0)
    limited = play_episode(TurnLimit(RelayEnv(max_turns=2), 5), _cycle(["x"]), seed=0)
    assert plain == limited


def test_reset_clears_the_truncation():
    env = TurnLimit(RelayEnv(max_turns=3), 1)
    play_episode(env, _cycle(["x"]), seed=0)
    env.reset(seed=1)
    assert env.agents == ["speaker", "listener"] and not any(env.truncations.values())


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_bad_max_turns_raise(bad):
    with pytest.raises(InvalidArgumentError):
        TurnLimit(RelayEnv(), bad)
