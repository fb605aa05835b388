"""MARFT (``--algo marft``): GAE over the team's sequence of agent-turns from the shared critic, action-level PPO,
the recipe filled in by ``TrainConfig.from_dict``, per-role adapters, exact resume, and learning from random init."""

from __future__ import annotations

import pytest
import torch

import teamgym
from teamgym.algos import ppo_clip_loss
from teamgym.errors import InvalidArgumentError
from teamgym.train import TrainConfig, train
from teamgym.train.checkpoint import load_latest_checkpoint
from teamgym.train.columns import batch_columns
from teamgym.train.critic import CriticEstimator, TeamCriticEstimator
from teamgym.train.estimators import estimate
from teamgym.train.metrics import read_metrics
from teamgym.train.sections import CriticConfig
from teamgym.train.update import action_logprobs
from tests.train.test_columns import random_trajectory_batch
from tests.train.test_critic import _equal
from tests.train.test_estimators import tally_registered, tiny  # noqa: F401 (tally_registered: a fixture)

pytest.importorskip("peft")


def reference_team_gae(rows, values, gamma, lam):
    """GAE written as MARFT's buffer computes it: per episode, over every agent's turn in step order (agent i's
    next state is agent i + 1's, the last turn terminal), each turn's reward what its step paid the whole team."""
    advantages = [0.0] * len(rows)
    for episode in {row["episode_id"] for row in rows}:
        chain = sorted((i for i, row in enumerate(rows) if row["episode_id"] == episode), key=lambda i: rows[i]["step"])
        gae, next_value = 0.0, 0.0
        for i in reversed(chain):
            reward = rows[i]["rewards"] + sum(rows[i]["others_rewards"].values())
            delta = reward + gamma * next_value - values[i]
            gae = delta + gamma * lam * gae
            advantages[i], next_value = gae, values[i]
    return advantages


@pytest.mark.parametrize("seed", range(4))
def test_advantages_are_gae_over_the_team_sequence_of_turns(seed):
    estimator = TeamCriticEstimator(CriticConfig(lam=0.95, whiten=False), seed=seed)
    for step in range(3):  # move the critic off its zero init
        estimate(estimator, random_trajectory_batch(50 + step), rollout="trajectory")
    batch = random_trajectory_batch(seed)
    columns = batch_columns(batch, estimator.columns, rollout="trajectory")
    values = estimator.values(columns).tolist()
    expected = reference_team_gae(batch.rows(), values, gamma=0.99, lam=0.95)
    torch.testing.assert_close(estimator.advantages(columns), torch.tensor(expected, dtype=torch.float32))


def test_the_team_chain_differs_from_turn_ppos_per_role_chains():
    """Same critic, same batch: marft's chain crosses agents (a speaker's turn bootstraps from its listener's)."""
    batch = random_trajectory_batch(1)
    config = CriticConfig(whiten=False)
    team, per_role = TeamCriticEstimator(config, seed=0), CriticEstimator(config, seed=0)
    for step in range(3):
        for estimator in (team, per_role):
            estimate(estimator, random_trajectory_batch(50 + step), rollout="trajectory")
    assert not torch.allclose(estimate(team, batch, rollout="trajectory"),
                              estimate(per_role, batch, rollout="trajectory"))


def test_action_level_ratios_clip_one_ratio_per_completion():
    generator = torch.Generator().manual_seed(0)
    new, old = -torch.rand(5, 7, generator=generator) * 2, -torch.rand(5, 7, generator=generator) * 2
    mask = torch.ones(5, 7)
    for row, length in enumerate([7, 3, 1, 5, 2]):
        mask[row, length:] = 0
    advantages = torch.tensor([1.0, -1.0, 0.5, -0.3, 2.0])
    new.requires_grad_(True)
    loss = ppo_clip_loss(*action_logprobs(new, old, mask), advantages, mask, clip_low=0.2, clip_high=0.2,
                         dual_clip=None, aggregation="seq-mean-token-mean").loss
    expected = []
    for row in range(5):  # PPO's surrogate of each whole action, averaged over the actions
        ratio = torch.exp(((new[row] - old[row]) * mask[row]).sum())
        a = advantages[row]
        expected.append(torch.maximum(-a * ratio, -a * ratio.clamp(0.8, 1.2)))
    reference = torch.stack(expected).mean()
    torch.testing.assert_close(loss, reference)
    (grad,) = torch.autograd.grad(loss, new)
    (expected_grad,) = torch.autograd.grad(reference, new)
    torch.testing.assert_close(grad, expected_grad)
    assert torch.all(grad[mask == 0] == 0)


def test_from_dict_fills_in_marfts_recipe_and_what_a_config_sets_wins():
    config = TrainConfig.from_dict({"algo": "marft"})
    assert config.role_adapters and config.critic.lam == 0.95 and config.ppo.ratio == "action"
    assert config.ppo.aggregation == "seq-mean-token-mean" and config.ppo.entropy_coef == 0.01
    assert config.ppo.dual_clip is None and config.rollout_mode == "trajectory"
    mine = TrainConfig.from_dict({"algo": "marft", "critic.lam": 0.9, "ppo": {"ratio": "token"}})
    assert mine.critic.lam == 0.9 and mine.ppo.ratio == "token" and mine.role_adapters
    assert TrainConfig.from_dict(config.to_dict()) == config  # a saved config.json loads as it ran
    other = TrainConfig.from_dict({"algo": "turn_ppo"})
    assert not other.role_adapters and other.critic.lam == 0.9 and other.ppo.ratio == "token"


def test_a_config_file_leaves_the_recipe_to_the_fields_it_does_not_set(tmp_path):
    import argparse
    import json

    from teamgym.train.cli import add_arguments, config_from_args

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"steps": 3, "critic": {"lam": 0.8}}))
    config = config_from_args(parser.parse_args(["--config", str(path), "--algo", "marft"]))
    assert config.steps == 3 and config.critic.lam == 0.8  # the file's own fields
    assert config.role_adapters and config.ppo.ratio == "action"  # the rest: the recipe
    path.write_text(json.dumps({"algo": "marft"}))
    other = config_from_args(parser.parse_args(["--config", str(path), "--algo", "turn_ppo"]))
    assert not other.role_adapters and other.ppo.ratio == "token" and other.critic.lam == 0.9


@pytest.mark.parametrize(("values", "message"), [
    ({"algo": "marft", "role_adapters": False}, r"role_adapters=False with algo='marft'.*set role_adapters=True"),
    ({"algo": "marft", "rollout": "tree"}, r"rollout='tree' cannot feed algo='marft'.*'trajectory'"),
    ({"ppo.ratio": "sequence"}, r"ppo.ratio='sequence': expected one of token, action"),
    ({"ppo.ratio": "action"}, r"ppo.ratio='action' with ppo.aggregation='token-mean'.*'seq-mean-token-mean'"),
])
def test_bad_marft_settings_name_the_value_and_the_fix(values, message):
    with pytest.raises(InvalidArgumentError, match=message):
        TrainConfig.from_dict(values)
    with pytest.raises(InvalidArgumentError, match="role_adapters=False with algo='marft'"):
        TrainConfig(algo="marft")  # built directly: no recipe filled in


def test_two_steps_then_resume_restore_the_adapters_and_the_critic_exactly(tmp_path):
    full = tiny(tmp_path, "full", algo="marft", steps=2, lora_rank=2)
    train(full)
    train(tiny(tmp_path, "part", algo="marft", steps=1, lora_rank=2))
    resumed = tiny(tmp_path, "part", algo="marft", steps=2, lora_rank=2)
    train(resumed, resume=True)
    a, b = load_latest_checkpoint(full.output_dir)[1], load_latest_checkpoint(resumed.output_dir)[1]
    assert a["estimator"]["name"] == "marft" and a["estimator"]["optimizer"]["state"]
    assert set(a["models"]) == set(a["optimizers"]) and len(a["models"]) >= 2  # an adapter per role
    assert _equal(a["estimator"], b["estimator"])
    assert _equal(a["models"], b["models"]) and _equal(a["optimizers"], b["optimizers"])
    rows_full, rows_resumed = read_metrics(full.output_dir), read_metrics(resumed.output_dir)
    for key in ("advantage/mean", "critic/loss", "loss", "clip_fraction"):
        assert [r[key] for r in rows_full] == [r[key] for r in rows_resumed], key


def test_agent_by_agent_training_steps_one_roles_adapter_at_a_time(tmp_path):
    """``ppo.agent_iteration_interval = 1``: RL step t updates roles[t % len(roles)] only (MARFT's agent-by-agent
    training); the other roles' adapters and optimizers do not move, while the critic trains every step."""
    from teamgym.train.checkpoint import load_checkpoint

    config = tiny(tmp_path, "run", algo="marft", steps=3, lora_rank=2, **{"ppo.agent_iteration_interval": 1})
    train(config)
    roles = list(teamgym.make(config.env_id, **config.env_kwargs).possible_agents)
    before, after = load_checkpoint(config.output_dir, 2), load_checkpoint(config.output_dir, 3)
    trained = roles[2 % len(roles)]  # step index 2 (the third step) is roles[2]'s
    assert not _equal(before["models"][trained], after["models"][trained])
    for role in roles:
        if role != trained:
            assert _equal(before["models"][role], after["models"][role]), role
            assert _equal(before["optimizers"][role], after["optimizers"][role]), role
    assert not _equal(before["estimator"], after["estimator"])  # the critic learns on every step


def test_agent_by_agent_training_needs_a_model_per_role():
    with pytest.raises(InvalidArgumentError, match=r"agent_iteration_interval=5 trains one role at a time.*role_adapt"):
        TrainConfig.from_dict({"algo": "turn_ppo", "ppo.agent_iteration_interval": 5})
    with pytest.raises(InvalidArgumentError, match=r"ppo.agent_iteration_interval=-1: expected an int >= 0"):
        TrainConfig.from_dict({"algo": "marft", "ppo.agent_iteration_interval": -1})
