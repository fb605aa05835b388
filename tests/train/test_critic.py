"""Turn-PPO's critic: it learns known values on a toy env, its advantages are GAE of its values, resume is exact."""

from __future__ import annotations

import random

import pytest
import torch

import teamgym
from teamgym.algos import combine_ids, turn_gae
from teamgym.errors import InvalidArgumentError
from teamgym.rollout.batch import AgentTurnBatch
from teamgym.train import TrainConfig, train
from teamgym.train.checkpoint import load_latest_checkpoint
from teamgym.train.columns import batch_columns
from teamgym.train.critic import CriticEstimator, whiten
from teamgym.train.estimators import estimate, make_estimator
from teamgym.train.metrics import read_metrics
from teamgym.train.sections import CriticConfig
from tests.train.test_columns import random_trajectory_batch
from tests.train.test_estimators import tally_registered, tiny  # noqa: F401 (tally_registered: a fixture)

#: The scripted player of sanity_two_turn-v0 answers the cue only for these cues, so each state's value is known.
KNOWN = "ab"


def two_turn_batch(episodes: int, seed: int) -> AgentTurnBatch:
    """``episodes`` of ``sanity_two_turn-v0`` played by a player that answers the cue for ``KNOWN`` cues only; the
    prompts are tokenised as their bytes."""
    rng = random.Random(seed)
    env = teamgym.make("sanity_two_turn-v0")
    rows = []
    for e in range(episodes):
        task = rng.randrange(4)
        env.reset(seed=task, options={"task_id": task})
        step = 0
        for agent in env.agent_iter():
            observation, *_, terminated, truncated, _ = env.last()
            if terminated or truncated:
                env.step(None)
                continue
            prompt = observation["prompt"]
            cue = prompt[0]
            env.step(cue if cue in KNOWN else "z")
            reward = float(env.rewards[agent])
            rows.append({"episode_id": f"e{e}", "task_id": task, "agent": agent, "turn": step, "step": step,
                         "branch": 0, "chosen": True, "prompt_ids": list(prompt.encode()), "completion_ids": [1],
                         "logprobs": [-1.0], "text": "", "reward_terms": {"team": reward, "local": 0.0},
                         "rewards": reward, "anchor": prompt, "success": cue in KNOWN, "infra_error": ""})
            step += 1
    env.close()
    return AgentTurnBatch.from_rows(rows)


def test_the_critic_learns_the_known_values_of_a_toy_env():
    """V(turn 1) = 1 where the player answers the cue, else 0; V(turn 0) = gamma * V(turn 1) (reward 0 at turn 0)."""
    estimator = CriticEstimator(CriticConfig(lr=1e-2, epochs=4))
    for step in range(60):
        estimate(estimator, two_turn_batch(16, seed=step), rollout="trajectory")
    probe = two_turn_batch(32, seed=10_000)
    values = estimator.values(batch_columns(probe, estimator.columns, rollout="trajectory"))
    for row, value in zip(probe.rows(), values.tolist(), strict=True):
        answered = chr(row["prompt_ids"][0]) in KNOWN
        expected = (1.0 if row["step"] == 1 else 0.99) if answered else 0.0
        assert value == pytest.approx(expected, abs=0.05), (row["anchor"], value, expected)
    assert estimator.metrics["critic/explained_variance"] > 0.95


def test_advantages_are_whitened_gae_of_the_values_before_the_update():
    batch = random_trajectory_batch(4)
    estimator = CriticEstimator(CriticConfig(), seed=3)
    for step in range(3):  # move the critic off its zero init
        estimate(estimator, random_trajectory_batch(10 + step), rollout="trajectory")
    columns = batch_columns(batch, estimator.columns, rollout="trajectory")
    before = estimator.values(columns)
    expected, _ = turn_gae(columns["agent_rewards"], before, combine_ids(columns["episode_ids"],
                                                                          columns["agent_ids"]), columns["steps"],
                           gamma=0.99, lam=0.9)
    advantages = estimator.advantages(columns)
    torch.testing.assert_close(advantages, whiten(expected).float())
    assert not torch.equal(estimator.values(columns), before)  # then the critic learned from the batch
    raw = CriticEstimator(CriticConfig(whiten=False), seed=3)
    raw.load_state_dict(CriticEstimator(CriticConfig(), seed=3).state_dict())
    assert raw.advantages(columns).abs().sum() > 0


def test_the_critic_init_is_seeded_and_leaves_the_global_rng_alone():
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    a, b = CriticEstimator(CriticConfig(), seed=1), CriticEstimator(CriticConfig(), seed=1)
    assert torch.equal(torch.rand(3), expected)
    assert all(torch.equal(x, y) for x, y in zip(a.critic.state_dict().values(), b.critic.state_dict().values(),
                                                 strict=True))


def _equal(a, b) -> bool:
    """Nested checkpoint states equal, tensors exactly."""
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def test_two_steps_then_resume_restore_the_critic_and_its_optimizer_exactly(tmp_path):
    full = tiny(tmp_path, "full", algo="turn_ppo", steps=2)
    train(full)
    train(tiny(tmp_path, "part", algo="turn_ppo", steps=1))
    resumed = tiny(tmp_path, "part", algo="turn_ppo", steps=2)
    train(resumed, resume=True)
    a, b = load_latest_checkpoint(full.output_dir)[1], load_latest_checkpoint(resumed.output_dir)[1]
    assert a["step"] == b["step"] == 2
    assert a["estimator"]["name"] == "turn_ppo" and a["estimator"]["optimizer"]["state"]  # Adam moments saved
    assert _equal(a["estimator"], b["estimator"])
    assert _equal(a["models"], b["models"]) and _equal(a["optimizers"], b["optimizers"])
    rows_full, rows_resumed = read_metrics(full.output_dir), read_metrics(resumed.output_dir)
    assert [r["step"] for r in rows_resumed] == [1, 2]
    for key in ("advantage/mean", "critic/loss", "critic/value_mean", "loss"):
        assert [r[key] for r in rows_full] == [r[key] for r in rows_resumed], key


def test_a_checkpoint_of_another_estimator_is_refused():
    estimator = make_estimator(TrainConfig(algo="turn_ppo"))
    with pytest.raises(InvalidArgumentError, match="resume with the run's own config.json"):
        estimator.load_state_dict({"name": "spo", "signal": "success", "tracker": {}})


@pytest.mark.parametrize(("overrides", "message"), [
    ({"critic.gamma": 1.5}, r"critic.gamma=1.5: expected a float in \[0, 1\] \(Turn-PPO: 0.99\)"),
    ({"critic.lam": -0.1}, r"critic.lam=-0.1: expected a finite number >= 0.0 \(Turn-PPO: 0.9\)"),
    ({"critic.lr": 0}, r"critic.lr=0: expected a finite number > 0"),
    ({"critic.epochs": 0}, r"critic.epochs=0: expected an int >= 1"),
    ({"critic.value_clip": -1.0}, r"critic.value_clip=-1.0: expected a finite number > 0.0 \(e.g. 0.2, or None"),
    ({"critic.whiten": "yes"}, r"critic.whiten='yes': expected true or false"),
    ({"critic.buckets": 1}, r"critic.buckets=1: expected an int >= 2"),
])
def test_bad_critic_settings_name_the_value_and_the_fix(overrides, message):
    with pytest.raises(InvalidArgumentError, match=message):
        TrainConfig.from_dict({"algo": "turn_ppo", **overrides})


def test_turn_ppo_needs_a_trajectory_rollout():
    with pytest.raises(InvalidArgumentError, match="rollout='tree' cannot feed algo='turn_ppo'.*'trajectory'"):
        TrainConfig(algo="turn_ppo", rollout="tree")
    config = TrainConfig(algo="turn_ppo", critic=CriticConfig(value_clip=None))
    assert config.rollout_mode == "trajectory" and config.critic.value_clip is None
