"""Failure replay (``task_replay``): part of each step's tasks re-drawn from the training tasks the run failed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from teamgym.errors import InvalidArgumentError
from teamgym.train import TrainConfig, train
from teamgym.train.checkpoint import load_latest_checkpoint
from teamgym.train.evaluation import FailureReplay
from teamgym.train.metrics import read_metrics


def episodes(outcomes: dict[int, list[bool]]) -> list[dict]:
    return [{"task_id": task, "success": ok} for task, results in outcomes.items() for ok in results]


def test_failed_tasks_join_the_pool_and_leave_it_once_every_episode_succeeds():
    replay = FailureReplay(0.5, size=64, seed=0)
    replay.observe(episodes({1: [True, True], 2: [True, False], 3: [False, False]}))
    assert replay.pool == [2, 3]  # 1 never failed
    replay.observe(episodes({3: [True, True], 4: [False]}))
    assert replay.pool == [2, 4]  # 3 solved on every episode: out
    replay.observe(episodes({2: [False, True]}))
    assert replay.pool == [4, 2]  # failed again: moved to the newest end


def test_the_pool_keeps_the_newest_failures():
    replay = FailureReplay(0.5, size=3, seed=0)
    for task in range(5):
        replay.observe(episodes({task: [False]}))
    assert replay.pool == [2, 3, 4]


def test_draw_replaces_a_share_of_the_fresh_tasks_with_distinct_failures():
    replay = FailureReplay(0.5, size=64, seed=0)
    fresh = [100, 101, 102, 103, 104, 105, 106, 107]
    assert replay.draw(0, fresh) == fresh  # an empty pool: every task fresh
    replay.observe(episodes({1: [False], 2: [False]}))
    drawn = replay.draw(1, fresh)
    assert sorted(drawn[:2]) == [1, 2] and drawn[2:] == fresh[2:]  # fewer than the share while the pool is small
    replay.observe(episodes({t: [False] for t in range(10, 20)}))
    drawn = replay.draw(2, fresh)
    assert len(set(drawn[:4])) == 4 and set(drawn[:4]) <= set(replay.pool) and drawn[4:] == fresh[4:]
    assert drawn == replay.draw(2, fresh)  # fixed by (seed, step)
    assert FailureReplay(0.0, 64, seed=0).draw(2, fresh) == fresh


def test_off_keeps_no_pool():
    replay = FailureReplay(0.0, size=64, seed=0)
    replay.observe(episodes({1: [False]}))
    assert replay.pool == []


@pytest.mark.parametrize("value", [-0.1, 1.0, 1.5, float("nan"), True, "half"])
def test_a_bad_share_is_refused_naming_the_field(value):
    with pytest.raises(InvalidArgumentError, match=r"task_replay="):
        TrainConfig(task_replay=value)


def test_a_bad_pool_size_is_refused():
    with pytest.raises(InvalidArgumentError, match=r"task_replay_size=0"):
        TrainConfig(task_replay=0.5, task_replay_size=0)


def tiny(tmp_path: Path, name: str, **overrides) -> TrainConfig:
    """plan_path-v0 with a random-init 1-layer model: it fails nearly every task, so the pool fills at once."""
    values = dict(env_id="plan_path-v0", steps=3, output_dir=str(tmp_path / name), tasks_per_step=4, group_size=2,
                  n_layer=1, n_embd=16, n_head=1, max_new_tokens=8, sft_steps=0, eval_tasks=2, eval_every=0,
                  checkpoint_every=1, progress_bar=False, plot=False, torch_threads=1, save_batches=True,
                  task_replay=0.5)
    values.update(overrides)
    return TrainConfig.from_dict(values)


def step_tasks(output_dir: str, step: int) -> list[int]:
    """The task ids a step trained on, in order of first appearance."""
    path = Path(output_dir) / "batches" / f"step_{step:06d}.jsonl"
    tasks: list[int] = []
    for line in path.read_text().splitlines():
        task = json.loads(line)["task_id"]
        if task not in tasks:
            tasks.append(task)
    return tasks


def test_the_trainer_replays_the_tasks_it_failed_and_logs_it(tmp_path):
    config = tiny(tmp_path, "run")
    train(config)
    first, second = step_tasks(config.output_dir, 1), step_tasks(config.output_dir, 2)
    rows = read_metrics(config.output_dir)
    assert rows[0]["replay/tasks"] == 0 and rows[1]["replay/tasks"] == 2
    assert rows[0]["replay/pool"] >= 2
    assert set(second[:2]) <= set(first)  # replayed from step 1's failures
    assert not set(second[2:]) & set(first)  # the rest are fresh draws
    assert all(t < config.heldout_offset for step in (1, 2, 3) for t in step_tasks(config.output_dir, step))
    plain = tiny(tmp_path, "plain", task_replay=0.0)
    train(plain)
    assert step_tasks(plain.output_dir, 2)[2:] == second[2:]  # replay changes the replayed share only
    assert "replay/tasks" not in read_metrics(plain.output_dir)[0]


def test_resume_restores_the_pool_exactly(tmp_path):
    full = tiny(tmp_path, "full")
    train(full)
    train(tiny(tmp_path, "part", steps=1))
    resumed = tiny(tmp_path, "part")
    train(resumed, resume=True)
    a, b = load_latest_checkpoint(full.output_dir)[1], load_latest_checkpoint(resumed.output_dir)[1]
    assert a["replay"] == b["replay"] and a["replay"]["pool"]
    for step in (2, 3):
        assert step_tasks(full.output_dir, step) == step_tasks(resumed.output_dir, step)
    assert [r["reward/mean"] for r in read_metrics(full.output_dir)] == [
        r["reward/mean"] for r in read_metrics(resumed.output_dir)]
