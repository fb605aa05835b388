"""The RL learning-rate schedule (``ppo.lr_schedule``) and the curve it shares with the SFT warm start."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest
import torch

from teamgym.errors import InvalidArgumentError
from teamgym.train import TrainConfig, train
from teamgym.train.checkpoint import load_latest_checkpoint
from teamgym.train.trainer import lr_factor


def test_constant_is_one_everywhere():
    assert {lr_factor(step, 40, "constant") for step in range(40)} == {1.0}


def test_cosine_warms_up_then_decays_to_five_percent():
    total = 400
    factors = [lr_factor(step, total, "cosine") for step in range(total)]
    warmup = total // 20
    assert factors[:warmup] == pytest.approx([(i + 1) / warmup for i in range(warmup)])
    assert factors[warmup] == pytest.approx(1.0)
    assert all(a >= b for a, b in zip(factors[warmup:], factors[warmup + 1:]))  # never rises after the warm-up
    assert factors[-1] == pytest.approx(0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * (total - 1 - warmup)
                                                                           / (total - warmup))))
    assert 0.05 <= factors[-1] < 0.051
    assert lr_factor(0, 1, "cosine") == 1.0  # a one-step run trains at the peak


@pytest.mark.parametrize("value", ["linear", "", None, 1])
def test_a_bad_schedule_is_refused_naming_the_field(value):
    with pytest.raises(InvalidArgumentError, match=r"ppo.lr_schedule="):
        TrainConfig.from_dict({"ppo": {"lr_schedule": value}})


def tiny(tmp_path: Path, name: str, **overrides) -> TrainConfig:
    values = dict(env_id="plan_path-v0", steps=4, output_dir=str(tmp_path / name), tasks_per_step=2, group_size=2,
                  n_layer=1, n_embd=16, n_head=1, max_new_tokens=8, sft_steps=0, eval_tasks=2, eval_every=0,
                  checkpoint_every=1, progress_bar=False, plot=False, torch_threads=1,
                  ppo={"lr": 1e-3, "lr_schedule": "cosine"})
    values.update(overrides)
    return TrainConfig.from_dict(values)


def optimizer_lrs(output_dir: str) -> list[float]:
    state = load_latest_checkpoint(output_dir)[1]
    return [group["lr"] for optimizer in state["optimizers"].values() for group in optimizer["param_groups"]]


def final_weights(output_dir: str) -> torch.Tensor:
    models = load_latest_checkpoint(output_dir)[1]["models"]
    return torch.cat([t.flatten().float() for m in models.values() for t in m.values() if torch.is_tensor(t)])


def test_the_trainer_steps_at_the_scheduled_rate(tmp_path):
    scheduled = tiny(tmp_path, "cosine")
    train(scheduled)
    assert optimizer_lrs(scheduled.output_dir) == pytest.approx([1e-3 * lr_factor(3, 4, "cosine")])  # step 4's
    constant = tiny(tmp_path, "constant", ppo={"lr": 1e-3, "lr_schedule": "constant"})
    train(constant)
    assert optimizer_lrs(constant.output_dir) == [1e-3]
    assert not torch.equal(final_weights(scheduled.output_dir), final_weights(constant.output_dir))


def test_a_resumed_run_continues_the_same_curve(tmp_path):
    full = tiny(tmp_path, "full", keep_checkpoints=10)
    train(full)
    crashed = tmp_path / "crashed"
    shutil.copytree(full.output_dir, crashed)
    for step in (3, 4):  # as if the run had died after step 2
        shutil.rmtree(crashed / "checkpoints" / f"step_{step:08d}")
    (crashed / "summary.json").unlink()
    resumed = tiny(tmp_path, "crashed", keep_checkpoints=10)
    train(resumed, resume=True)
    assert torch.equal(final_weights(full.output_dir), final_weights(resumed.output_dir))
