"""RLlib on the candidate-choice env: its PettingZoo wrapper and PPO, one module per role.

``ray[rllib]`` pins gymnasium 1.2: run with ``bash scripts/test_marl.sh`` (its own venv); the learning run on a
local Ray is ``-m slow``."""

from __future__ import annotations

import pytest

pytest.importorskip("ray.rllib.algorithms.ppo", reason="ray[rllib] lives in its own venv: bash scripts/test_marl.sh")

from teamgym.errors import InvalidArgumentError  # noqa: E402
from teamgym.integrations.marl import candidate_env, random_choice, success_rate  # noqa: E402
from teamgym.integrations.rllib import PPOSettings, rllib_env, train_ppo  # noqa: E402

HELD_OUT = range(2**31, 2**31 + 100)


def test_rllib_env_plays_an_episode_and_pays_roles_from_last():
    env = rllib_env(candidate_env("plan_path-v0", max_turns=2))
    observations, _ = env.reset(seed=0)
    assert list(observations) == ["tool"]
    total = {"tool": 0.0, "planner": 0.0}
    done = False
    while not done:
        (agent,) = observations
        observations, rewards, terminated, truncated, infos = env.step({agent: 0})
        for a, r in rewards.items():
            total[a] += r
        done = terminated["__all__"] or truncated["__all__"]
        assert all(set(info) == {"team", "local", "success"} for info in infos.values())
    assert set(total) == {"tool", "planner"} and env.observation_spaces["tool"] == env.observation_spaces["planner"]


def test_settings_errors_name_the_field():
    with pytest.raises(InvalidArgumentError, match="iterations"):
        PPOSettings(iterations=0)


@pytest.mark.slow
def test_ppo_selectors_beat_random_candidates_on_held_out_tasks():
    make_env = lambda: candidate_env("plan_path-v0", max_turns=2)  # noqa: E731
    selectors = train_ppo(make_env, PPOSettings(seed=0, iterations=3))
    learned = success_rate(make_env, selectors.choose, HELD_OUT)
    baseline = success_rate(make_env, random_choice(0, 4), HELD_OUT)
    assert learned >= 0.7 and learned >= baseline + 0.5, (learned, baseline)
