"""The trainer with every estimator: trajectory rollouts (GiGPO), TreeRL on the tree, SPO trackers and their resume."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

import teamgym
from teamgym.errors import InvalidArgumentError, UnknownNameError
from teamgym.rollout.engine import task_seed
from teamgym.train import TrainConfig, Trainer, train
from teamgym.train.checkpoint import load_latest_checkpoint
from teamgym.train.columns import batch_columns
from teamgym.train.estimators import ESTIMATORS, TrackerEstimator, estimate, make_estimator, rollouts_for
from teamgym.train.metrics import read_metrics
from tests.train.test_columns import random_trajectory_batch

#: tally-v0's mixed rewards: team in {-1, 0, 1} plus format in {-0.5, 0}.
TALLY_RANGE = [-1.5, 1.0]
#: The estimators docs/training.md lists per rollout.
TREE_ESTIMATORS = ("at_grpo", "treerl")
TRAJECTORY_ESTIMATORS = ("grpo", "dr_grpo", "rloo", "dr_mas", "mhgpo", "gigpo", "team_gigpo", "turn_ppo")


@pytest.fixture(autouse=True)
def tally_registered(monkeypatch):
    """tally-v0 (three agents, env-chosen order, digits the tiny model emits by chance) for this module only."""
    from teamgym import registry

    monkeypatch.setattr(registry, "_registry", dict(registry._registry))
    teamgym.register("tally-v0", "tests.support.tally_env:TallyEnv")


def tiny(tmp_path: Path, name: str, **overrides) -> TrainConfig:
    values = dict(env_id="tally-v0", env_kwargs={"max_turns": 1}, steps=2, output_dir=str(tmp_path / name),
                  tasks_per_step=2, k=2, group_size=3, n_layer=1, n_embd=16, n_head=1, max_new_tokens=4,
                  sft_steps=0, eval_tasks=4, checkpoint_every=1, progress_bar=False, plot=False, torch_threads=1)
    values.update(overrides)
    return TrainConfig.from_dict(values)


class SeedRecorder:
    """Wraps the trainer's env factory: records every ``reset(seed=...)`` per task."""

    def __init__(self, env_fn):
        self.env_fn, self.seeds = env_fn, []

    def __call__(self):
        env = self.env_fn()
        reset = env.reset

        def recording_reset(seed=None, options=None):
            self.seeds.append(((options or {}).get("task_id"), seed))
            return reset(seed=seed, options=options)

        env.reset = recording_reset
        return env


def test_trajectory_rollout_groups_trajectories_of_a_task_and_never_mixes_tasks(tmp_path):
    trainer = Trainer(tiny(tmp_path, "groups", algo="gigpo", tasks_per_step=3, group_size=4))
    recorder = SeedRecorder(trainer.engine.slots.env_fn)
    trainer.engine.slots.env_fn = recorder
    result = trainer._rollout()
    batch = result.batch
    columns = batch_columns(batch, ("task_ids", "anchor_ids"), rollout="trajectory")
    rows = batch.rows()
    tasks = trainer.task_ids(0)
    assert len(result.episodes) == 3 * 4 and len(batch) == len({(r["episode_id"], r["step"]) for r in rows})
    for task in set(tasks):
        episodes = {r["episode_id"] for r in rows if r["task_id"] == task}
        assert len(episodes) == 4 * tasks.count(task)
        assert len({int(columns["task_ids"][i]) for i, r in enumerate(rows) if r["task_id"] == task}) == 1
        # equal seeds: every repeat of the task starts from the same state, so the first anchors agree
        assert {r["anchor"] for r in rows if r["task_id"] == task and r["step"] == 0} == {
            next(r["anchor"] for r in rows if r["task_id"] == task and r["step"] == 0)}
        assert {seed for t, seed in recorder.seeds if t == task} == {task_seed(task)}
    for i, a in enumerate(rows):
        for j, b in enumerate(rows):
            if columns["task_ids"][i] == columns["task_ids"][j]:
                assert a["task_id"] == b["task_id"]
            same_anchor = bool(columns["anchor_ids"][i] == columns["anchor_ids"][j])
            assert same_anchor == (a["task_id"] == b["task_id"] and a["anchor"] == b["anchor"])
    assert len(set(columns["anchor_ids"].tolist())) < len(batch)  # identical states recur: step groups exist


@pytest.mark.parametrize("algo", sorted(ESTIMATORS))
def test_the_cli_trains_every_registered_estimator_two_steps_on_the_main_job(tmp_path, algo, capsys):
    """`teamgym train --algo X --steps 2` for every registered X, on the main job's env at a tiny size."""
    from teamgym import cli

    output = tmp_path / algo
    status = cli.main(["train", "--algo", algo, "--steps", "2", "--output-dir", str(output), "--sft-steps", "0",
                       "--eval-tasks", "2", "--tasks-per-step", "2", "--tree-k", "2", "--group-size", "2",
                       "--n-layer", "1", "--n-embd", "16", "--n-head", "1", "--sampling-max-new-tokens", "6",
                       "--no-progress", "--no-plot"])
    assert status == 0, capsys.readouterr().err
    rows = read_metrics(output)
    assert [r["step"] for r in rows] == [1, 2] and all(math.isfinite(r["loss"]) for r in rows)
    assert f"after 2 {algo} steps" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("algo", "extra", "rollout"),
    [("gigpo", {}, "trajectory"), ("team_gigpo", {}, "trajectory"), ("treerl", {}, "tree"),
     ("spo", {}, "trajectory"), ("spo_per_agent", {}, "trajectory"), ("spo", {"group_size": 1}, "trajectory"),
     ("dr_mas", {}, "trajectory"), ("mhgpo", {}, "trajectory"), ("turn_ppo", {}, "trajectory"),
     ("spo_per_agent", {"rollout": "tree", "spo_reward": "mixed", "spo_reward_range": TALLY_RANGE}, "tree"),
     ("spo", {"rollout": "tree", "k": 1, "spo_reward": "mixed", "spo_reward_range": TALLY_RANGE}, "tree")],
)
def test_every_estimator_trains_two_steps(tmp_path, algo, extra, rollout):
    config = tiny(tmp_path, algo, algo=algo, **extra)
    summary = train(config)
    assert summary["rollout"] == rollout and summary["algo"] == algo
    rows = read_metrics(config.output_dir)
    assert [r["step"] for r in rows] == [1, 2]
    for row in rows:
        assert all(math.isfinite(row[f"advantage/{s}"]) for s in ("mean", "std", "min", "max"))
        assert math.isfinite(row["loss"])
        per_node = config.tree.k if rollout == "tree" else 1
        episodes = config.tasks_per_step * (config.group_size if rollout == "trajectory" else 1)
        assert row["completions"] >= episodes * per_node
        if not config.tree_sampling.continue_unchosen:  # continued candidates sample one completion per node
            assert row["completions"] % per_node == 0
    if algo.startswith("spo"):
        state = load_latest_checkpoint(config.output_dir)[1]["estimator"]
        assert state["name"] == algo and len(state["tracker"]["keys"]) > 0


def test_gigpo_advantages_are_not_trivial_on_a_real_rollout(tmp_path):
    trainer = Trainer(tiny(tmp_path, "g", algo="gigpo", tasks_per_step=2, group_size=4))
    batch = trainer._rollout().batch
    advantages = estimate(trainer.estimator, batch, rollout="trajectory")
    assert advantages.shape == (len(batch),) and torch.isfinite(advantages).all() and advantages.abs().sum() > 0


def test_resume_restores_the_tracker_exactly(tmp_path):
    settings = dict(algo="spo_per_agent", spo_reward="mixed", spo_reward_range=TALLY_RANGE)
    full = tiny(tmp_path, "full", steps=4, **settings)
    train(full)
    train(tiny(tmp_path, "part", steps=2, **settings))
    resumed = tiny(tmp_path, "part", steps=4, **settings)
    train(resumed, resume=True)
    a, b = load_latest_checkpoint(full.output_dir)[1], load_latest_checkpoint(resumed.output_dir)[1]
    assert a["step"] == b["step"] == 4
    assert a["estimator"] == b["estimator"] and len(a["estimator"]["tracker"]["keys"]) > 0
    assert all(torch.equal(a["models"]["shared"][k], b["models"]["shared"][k]) for k in a["models"]["shared"])
    assert [r["advantage/mean"] for r in read_metrics(full.output_dir)] == \
        [r["advantage/mean"] for r in read_metrics(resumed.output_dir)]


def test_tracker_reads_the_baseline_before_updating():
    batch = random_trajectory_batch(1)
    batch.success = torch.tensor([i % 2 == 0 for i in range(len(batch))])
    spo = TrackerEstimator("spo")
    columns = batch_columns(batch, spo.columns, rollout="trajectory")
    before = spo.tracker.baseline(spo.keys(columns))
    assert torch.equal(before, torch.full_like(before, 0.5))  # unseen keys: the prior, not this batch's rewards
    spo.advantages(columns)
    assert len(spo.tracker) == len(set(batch.task_id))


def test_spo_per_agent_equals_spo_with_one_agent_and_one_turn():
    batch = random_trajectory_batch(2)
    batch = batch.select(batch.step == 0)
    batch.agent = ["solo"] * len(batch)
    batch.success = torch.rand(len(batch)) > 0.5
    spo, per_agent = TrackerEstimator("spo"), TrackerEstimator("spo_per_agent")
    columns = batch_columns(batch, per_agent.columns, rollout="trajectory")  # holds spo's columns too
    for _ in range(3):
        assert torch.allclose(spo.advantages(columns), per_agent.advantages(columns))


@pytest.mark.parametrize(
    ("overrides", "field", "fix"),
    [({"group_size": 0}, "group_size=0", "expected an int >= 1"),
     ({"gamma": 1.5}, "gamma=1.5", "[0, 1]"),
     ({"omega": -1.0}, "omega=-1.0", ">= 0"),
     ({"algo": "gigpo", "group_size": 1}, "group_size=1", "group_size >= 2"),
     ({"algo": "gigpo", "rollout": "tree"}, "rollout='tree'", "rollout='auto' or 'trajectory'"),
     ({"algo": "at_grpo", "rollout": "trajectory"}, "rollout='trajectory'", "'tree'"),
     ({"algo": "treerl", "rollout": "trajectory"}, "rollout='trajectory'", "'tree'"),
     ({"algo": "spo", "rollout": "tree"}, "spo_reward='success'", "spo_reward='mixed'"),
     ({"algo": "spo", "spo_reward": "binary"}, "spo_reward='binary'", "success, mixed"),
     ({"algo": "spo", "spo_reward_range": [1, 0]}, "spo_reward_range=[1, 0]", "low < high"),
     ({"algo": "spo", "spo_rho": 1.0}, "spo_rho=1.0", "(0, 1)"),
     ({"algo": "gigpo", "drop_zero_variance": True}, "drop_zero_variance=True", "drop_zero_variance=False"),
     ({"rollout": "both"}, "rollout='both'", "auto, tree, trajectory")],
)
def test_bad_estimator_settings_name_field_value_and_fix(overrides, field, fix):
    with pytest.raises(InvalidArgumentError) as err:
        TrainConfig.from_dict(overrides)
    assert field in str(err.value) and fix in str(err.value)


def test_documented_estimator_lists_match_what_the_rollouts_feed():
    assert all(rollouts_for(name) == ("tree",) for name in TREE_ESTIMATORS)
    assert all(rollouts_for(name) == ("trajectory",) for name in TRAJECTORY_ESTIMATORS)


def test_unknown_and_unusable_algos_list_every_usable_name():
    usable = set(ESTIMATORS)
    assert usable >= {"at_grpo", "grpo", "dr_grpo", "rloo", "dr_mas", "mhgpo", "treerl", "gigpo", "team_gigpo",
                           "spo", "spo_per_agent", "turn_ppo"}
    with pytest.raises(UnknownNameError) as err:
        TrainConfig(algo="gipgo")
    assert all(name in str(err.value) for name in usable)
    with pytest.raises(InvalidArgumentError) as err:
        estimate(make_estimator(TrainConfig(algo="gigpo")), random_trajectory_batch(0), rollout="tree")
    assert all(name in str(err.value) for name in usable)


def test_mixed_reward_outside_the_range_names_the_field():
    batch = random_trajectory_batch(4)
    with pytest.raises(InvalidArgumentError, match="spo_reward_range"):
        estimate(TrackerEstimator("spo", signal="mixed", reward_range=(0.0, 0.1)), batch, rollout="trajectory")
