"""Tianshou on the candidate-choice env: its PettingZooEnv and multi-agent DQN, one learner per role.

Tianshou pins pandas<3: run with ``bash scripts/test_marl.sh`` (its own venv); the learning run is ``-m slow``."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tianshou", reason="tianshou lives in its own venv: bash scripts/test_marl.sh")

from teamgym.errors import InvalidArgumentError  # noqa: E402
from teamgym.integrations.marl import candidate_env, random_choice, success_rate  # noqa: E402
from teamgym.integrations.tianshou import SelectorConfig, tianshou_env, train_selectors  # noqa: E402

HELD_OUT = range(2**31, 2**31 + 100)  # task ids no training reset draws (they are below 2**31)


def test_tianshou_env_plays_an_episode_with_masks_and_numeric_infos():
    env = tianshou_env(candidate_env("plan_path-v0", max_turns=2, k=3))
    observation, info = env.reset(seed=0)
    assert observation["agent_id"] == "tool" and observation["mask"] == [True] * 3
    assert observation["obs"].shape == env.observation_space.shape
    steps, terminated, truncated = 0, False, False
    while not (terminated or truncated):
        observation, rewards, terminated, truncated, info = env.step(0)
        steps += 1
        assert len(rewards) == 2 and all(isinstance(v, float) for v in info.values())
    assert 2 <= steps <= 4 and set(info) == {"team", "local", "success"}


def test_config_errors_name_the_field():
    with pytest.raises(InvalidArgumentError, match="epochs"):
        SelectorConfig(epochs=0)
    with pytest.raises(InvalidArgumentError, match="lr"):
        SelectorConfig(lr=-1.0)


@pytest.mark.slow
@pytest.mark.parametrize("env_id", ["plan_path-v0", "sokoban-v0"])
def test_dqn_selectors_beat_random_candidates_on_held_out_tasks(env_id):
    np.random.seed(0)  # Tianshou's exploration and replay sampling draw from NumPy's global generator
    make_env = lambda: candidate_env(env_id, max_turns=2)  # noqa: E731
    selectors = train_selectors(make_env, SelectorConfig(seed=0))
    learned = success_rate(make_env, selectors.choose, HELD_OUT)
    baseline = success_rate(make_env, random_choice(0, 4), HELD_OUT)
    assert learned >= 0.7 and learned >= baseline + 0.5, (learned, baseline)


@pytest.mark.slow
def test_the_example_runs_at_a_tiny_budget():
    path = Path(__file__).resolve().parents[2] / "examples" / "marl_candidates.py"
    spec = importlib.util.spec_from_file_location("marl_candidates_example", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    (row,) = example.main(["--epochs", "1", "--steps-per-epoch", "50", "--tasks", "5", "--env", "sudoku-v0"])
    assert row["library"] == "tianshou" and 0.0 <= row["learned"] <= 1.0 and 0.0 <= row["random"] <= 1.0
