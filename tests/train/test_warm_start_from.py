"""``warm_start_from``: a run that starts from another run's warm start is the run it would have been with its own,
and a warm start made with other settings is refused. ``steps=0`` makes a warm start only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from teamgym.errors import CheckpointError, InvalidArgumentError
from teamgym.train import TrainConfig, train
from teamgym.train.checkpoint import list_checkpoints, load_latest_checkpoint
from teamgym.train.config import WARM_START_FIELDS, warm_start_differences
from teamgym.train.metrics import read_metrics

#: metrics that measure time, not what was computed
TIMING = ("tokens_per_s", "time_share", "time/", "seconds")


#: plan_path-v0 warm-starts with SFT on its demonstrations; the sanity bandit has none, but its rewards differ
#: between candidates from random init, so its RL steps move the weights by their advantages (not only by entropy).
ENVS = {"plan_path-v0": {}, "sanity_bandit-v0": {"sft_steps": 0, "k": 8, "tasks_per_step": 16, "steps": 3}}


def tiny(tmp_path: Path, name: str, **overrides) -> TrainConfig:
    values = dict(env_id="plan_path-v0", algo="at_grpo", steps=2, output_dir=str(tmp_path / name), tasks_per_step=2,
                  k=2, n_layer=1, n_embd=16, n_head=1, sft_steps=3, sft_tasks=4, eval_tasks=2, eval_every=0,
                  progress_bar=False, plot=False, torch_threads=1, **{"ppo.entropy_coef": 0.05})
    values.update(overrides)
    return TrainConfig.from_dict(values)


def computed(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in row.items() if not any(t in k for t in TIMING)} for row in rows]


def weights(output_dir: str) -> dict[str, torch.Tensor]:
    return load_latest_checkpoint(output_dir)[1]["models"]["shared"]


def test_warm_start_only_run_writes_step_0_and_reports_its_evaluation(tmp_path):
    config = tiny(tmp_path, "warm", steps=0, plot=True)
    summary = train(config)
    assert [p.name for p in list_checkpoints(config.output_dir)] == ["step_00000000"]
    assert read_metrics(config.output_dir) == []
    assert summary["steps"] == 0 and summary["completions_used"] == 0
    assert summary["heldout_success_after"] == summary["heldout_success_after_sft"]
    assert summary["heldout_sampled_success_after"] == summary["heldout_sampled_success_after_sft"]


@pytest.mark.parametrize("env_id", ENVS)
@pytest.mark.parametrize("maker", ["turn_ppo", "at_grpo"])
def test_a_run_from_a_shared_warm_start_equals_the_run_with_its_own(tmp_path, maker, env_id):
    """The warm start's maker may run another algo; what follows is bit for bit the full run's."""
    env = {"env_id": env_id, **ENVS[env_id]}
    full = tiny(tmp_path, "full", **env)
    full_summary = train(full)
    train(tiny(tmp_path, "warm", **{**env, "steps": 0, "algo": maker, **({"group_size": 3} if maker == "turn_ppo"
                                                                          else {})}))
    shared = tiny(tmp_path, "shared", warm_start_from=str(tmp_path / "warm"), **env)
    shared_summary = train(shared)
    rows = read_metrics(full.output_dir)
    assert computed(read_metrics(shared.output_dir)) == computed(rows)
    warm, a, b = weights(str(tmp_path / "warm")), weights(full.output_dir), weights(shared.output_dir)
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert any(not torch.equal(a[k], warm[k]) for k in a)  # RL moved them: the equality above says something
    if env_id == "sanity_bandit-v0":
        assert any(r["advantage/std"] > 0 for r in rows)
    for key in ("heldout_success_before", "heldout_success_after_sft", "heldout_success_after",
                "heldout_sampled_success_after_sft", "heldout_sampled_success_after", "completions_used"):
        assert shared_summary[key] == full_summary[key], key
    assert shared_summary["warm_start_from"] == str(tmp_path / "warm") and full_summary["warm_start_from"] is None
    # the run's own step 0 is the warm start, so it can be resumed and shared in turn
    assert list_checkpoints(shared.output_dir)[0].name == "step_00000000"


def test_a_shared_warm_start_run_resumes_exactly(tmp_path):
    env = {"env_id": "sanity_bandit-v0", **ENVS["sanity_bandit-v0"]}
    warm = {**env, "warm_start_from": str(tmp_path / "warm")}
    train(tiny(tmp_path, "warm", **{**env, "steps": 0}))
    full = tiny(tmp_path, "full", **warm)
    train(full)
    train(tiny(tmp_path, "part", **{**warm, "steps": 1}))
    resumed = tiny(tmp_path, "part", **warm)
    train(resumed, resume=True)
    assert computed(read_metrics(resumed.output_dir)) == computed(read_metrics(full.output_dir))


# sft_perturb needs a preset with a random first turn (the trainer refuses it on 'compact' before it starts)
FEEDBACK = {"prompt_format": "compact_feedback"}


@pytest.mark.parametrize(("field", "value", "named", "base"), [
    ("seed", 1, "seed=0", {}),
    ("n_embd", 32, "n_embd=16", {}),
    ("sft_steps", 4, "sft_steps=3", {}),
    ("temperature", 0.7, "sampling.temperature=1.0", {}),
    ("sft_perturb", 0.5, "sft_perturb=0.0", FEEDBACK),
    ("env_kwargs", {"size": 5, "max_turns": 3}, "env_kwargs", {}),
    ("heldout_offset", 7, "heldout_offset=1000000", {}),
])
def test_a_warm_start_made_with_other_settings_is_refused_naming_the_field(tmp_path, field, value, named, base):
    train(tiny(tmp_path, "warm", steps=0, **base))
    with pytest.raises(InvalidArgumentError, match=named.replace(".", r"\.").replace("(", r"\(")) as err:
        train(tiny(tmp_path, "other", warm_start_from=str(tmp_path / "warm"), **base, **{field: value}))
    assert "warm_start_from=" in str(err.value)
    assert not (tmp_path / "other" / "checkpoints").exists()


def test_rl_settings_may_differ_from_the_warm_starts():
    base = TrainConfig.from_dict({"algo": "at_grpo"})
    free = TrainConfig.from_dict({"algo": "gigpo", "group_size": 4, "steps": 7, "ppo.lr": 1e-3, "tree.k": 2,
                                  "alpha": 0.5, "completion_budget": 99, "prm.weight": 0.0, "torch_threads": 2,
                                  "output_dir": "elsewhere"})
    assert warm_start_differences(base.to_dict(), free) == []
    assert all(isinstance(f, str) for f in WARM_START_FIELDS)


def test_a_warm_start_saved_before_a_field_existed_counts_with_the_fields_earlier_value():
    # sft_perturb arrived on 2026-12-07; a warm start saved before it was made without perturbed demonstrations
    saved = TrainConfig.from_dict({}).to_dict()
    del saved["sft_perturb"]
    assert warm_start_differences(saved, TrainConfig.from_dict({})) == []
    assert warm_start_differences(saved, TrainConfig.from_dict({"sft_perturb": 0.5})) == [
        "sft_perturb=0.0 (this run: 0.5)"]


def test_a_folder_without_a_warm_start_checkpoint_is_refused_naming_what_it_has(tmp_path):
    train(tiny(tmp_path, "long", steps=2, checkpoint_every=1, keep_checkpoints=1))
    with pytest.raises(CheckpointError, match=r"no checkpoint of step 0.*step_00000002"):
        train(tiny(tmp_path, "other", warm_start_from=str(tmp_path / "long")))
    with pytest.raises(CheckpointError, match="no checkpoint of step 0.*none"):
        train(tiny(tmp_path, "other2", warm_start_from=str(tmp_path / "missing")))


def test_the_flag_and_a_bad_value(tmp_path):
    from teamgym.train.cli import main

    with pytest.raises(InvalidArgumentError, match="warm_start_from=3"):
        TrainConfig.from_dict({"warm_start_from": 3})
    with pytest.raises(InvalidArgumentError, match="steps=-1.*0 for the warm start only"):
        TrainConfig.from_dict({"steps": -1})
    train(tiny(tmp_path, "warm", steps=0))
    args = json.loads((tmp_path / "warm" / "config.json").read_text())
    assert args["steps"] == 0
    code = main(["--env-id", "plan_path-v0", "--algo", "at_grpo", "--steps", "1", "--tasks-per-step", "2", "--k", "2",
                 "--n-layer", "1", "--n-embd", "16", "--n-head", "1", "--sft-steps", "3", "--sft-tasks", "4",
                 "--eval-tasks", "2", "--eval-every", "0", "--no-progress-bar", "--no-plot", "--warm-start-from",
                 str(tmp_path / "warm"), "--output-dir", str(tmp_path / "cli")])
    assert code in (0, None)
    summary = json.loads((tmp_path / "cli" / "summary.json").read_text())
    assert summary["warm_start_from"] == str(tmp_path / "warm") and summary["steps"] == 1
