"""The estimator protocol: every estimator declares its rollouts and columns, one feeder builds them, one group key."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
import torch

import teamgym
from teamgym.algos import at_grpo, at_grpo_group_ids, factorize, group_ids
from teamgym.errors import InvalidArgumentError, RegistrationError
from teamgym.train import TrainConfig, train
from teamgym.train.checkpoint import load_latest_checkpoint
from teamgym.train.columns import COLUMNS, Columns, batch_columns
from teamgym.train.estimators import (
    ESTIMATORS,
    Estimator,
    EstimatorSpec,
    estimate,
    make_estimator,
    register_estimator,
)
from teamgym.train.metrics import read_metrics
from tests.train.test_columns import random_trajectory_batch, random_tree_batch
from tests.train.test_estimators import TALLY_RANGE, tiny


@pytest.fixture(autouse=True)
def tally_registered(monkeypatch):
    from teamgym import registry

    monkeypatch.setattr(registry, "_registry", dict(registry._registry))
    teamgym.register("tally-v0", "tests.support.tally_env:TallyEnv")


def config_for(algo: str) -> TrainConfig:
    extra = {"spo_reward": "mixed", "spo_reward_range": [-5.0, 5.0]} if algo.startswith("spo") else {}
    return TrainConfig.from_dict({"algo": algo, **extra})


@pytest.mark.parametrize("algo", sorted(ESTIMATORS))
def test_every_estimator_declares_rollouts_and_columns_the_feeder_provides(algo):
    estimator = make_estimator(config_for(algo))
    assert isinstance(estimator, Estimator) and estimator.name == algo
    assert estimator.rollouts == ESTIMATORS[algo].rollouts and set(estimator.rollouts) <= {"tree", "trajectory"}
    for rollout in estimator.rollouts:
        assert all(rollout in COLUMNS[name] for name in estimator.columns), (rollout, estimator.columns)
        batch = random_tree_batch(3) if rollout == "tree" else random_trajectory_batch(3)
        advantages = estimate(estimator, batch, rollout=rollout)
        assert advantages.shape == (len(batch),) and advantages.dtype == torch.float32
        assert torch.isfinite(advantages).all()


def test_the_feeder_builds_only_the_named_columns_and_refuses_others():
    batch = random_tree_batch(1)
    columns = batch_columns(batch, ("rewards", "node_ids", "tree_parents"), rollout="tree")
    assert list(columns) == ["rewards", "node_ids", "tree_parents"] and columns.rows == len(batch)
    assert len(columns["tree_parents"]) == len(batch) + len(set(batch.episode_id))  # then the virtual roots
    with pytest.raises(InvalidArgumentError, match="trajectory rollout"):
        batch_columns(batch, ("episode_returns",), rollout="tree")
    with pytest.raises(InvalidArgumentError, match="task_idz"):
        batch_columns(batch, ("task_idz",), rollout="tree")


def test_at_grpo_is_fed_its_tree_nodes_as_before():
    batch = random_tree_batch(4)
    expected = at_grpo(batch.rewards, factorize(batch.episode_id)[0], factorize(batch.agent)[0], batch.step)
    assert torch.equal(estimate(make_estimator(TrainConfig(algo="at_grpo")), batch, rollout="tree"), expected.float())


def test_one_group_key_for_the_batch_and_the_recorder():
    batch = random_tree_batch(5)
    nodes = batch.node_ids()
    assert torch.equal(nodes, at_grpo_group_ids(batch.episode_id, batch.agent, batch.step))
    # the same partition as every key column of a node: (episode, agent, turn, step)
    four = group_ids(batch.episode_id, batch.agent, batch.turn, batch.step)
    assert all(bool(((nodes == nodes[i]) == (four == four[i])).all()) for i in range(len(batch)))


class RunningMean:
    """A stateful test estimator: advantage = reward minus the mean reward of every earlier batch."""

    name = "running_mean"
    rollouts = ("tree",)
    columns = ("rewards",)

    def __init__(self) -> None:
        self.total, self.count = 0.0, 0

    def advantages(self, columns: Columns) -> torch.Tensor:
        rewards = columns["rewards"].to(torch.float64)
        baseline = self.total / self.count if self.count else 0.0
        self.total, self.count = self.total + float(rewards.sum()), self.count + columns.rows
        return (rewards - baseline).float()

    def state_dict(self) -> dict[str, Any]:
        return {"total": self.total, "count": self.count}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.total, self.count = float(state["total"]), int(state["count"])


@pytest.fixture
def running_mean_registered(monkeypatch):
    monkeypatch.setattr("teamgym.train.estimators.ESTIMATORS", dict(ESTIMATORS))
    register_estimator("running_mean", EstimatorSpec(("tree",), lambda config: RunningMean()))
    with pytest.raises(RegistrationError, match="running_mean"):
        register_estimator("running_mean", EstimatorSpec(("tree",), lambda config: RunningMean()))


def test_a_registered_stateful_estimator_trains_and_resumes_exactly(tmp_path, running_mean_registered):
    full = tiny(tmp_path, "full", algo="running_mean", steps=3)
    train(full)
    train(tiny(tmp_path, "part", algo="running_mean", steps=1))
    train(tiny(tmp_path, "part", algo="running_mean", steps=3), resume=True)
    a, b = load_latest_checkpoint(full.output_dir)[1], load_latest_checkpoint(tmp_path / "part")[1]
    assert a["estimator"] == b["estimator"] and a["estimator"]["count"] > 0
    assert [r["advantage/mean"] for r in read_metrics(full.output_dir)] == \
        [r["advantage/mean"] for r in read_metrics(tmp_path / "part")]
    with pytest.raises(InvalidArgumentError, match="cannot feed algo='running_mean'"):
        TrainConfig.from_dict({"algo": "running_mean", "rollout": "trajectory"})


def test_spo_columns_follow_its_signal():
    assert "success" in make_estimator(TrainConfig(algo="spo")).columns
    mixed = make_estimator(TrainConfig.from_dict({"algo": "spo_per_agent", "spo_reward": "mixed",
                                                  "spo_reward_range": TALLY_RANGE}))
    assert {"rewards", "task_keys", "agent_names", "turns"} <= set(mixed.columns) and "success" not in mixed.columns
