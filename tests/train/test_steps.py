"""One step numbering: step N is the state after N RL updates in metrics, CSV, TensorBoard, checkpoints, batches, the
plot and the resume log; ``--env-backend ray`` trains with Ray env actors."""

from __future__ import annotations

import csv
import importlib.util
import json
import logging

import pytest

from teamgym import cli
from teamgym.train.checkpoint import list_checkpoints
from teamgym.train.metrics import heldout_points, plot_steps, read_metrics

TINY = ["--sft-steps", "1", "--sft-tasks", "2", "--sft-batch-size", "2", "--eval-tasks", "2", "--tasks-per-step", "2",
        "--tree-k", "2", "--n-layer", "1", "--n-embd", "16", "--n-head", "1", "--sampling-max-new-tokens", "6",
        "--checkpoint-every", "1", "--keep-checkpoints", "5", "--eval-every", "1", "--set", "save_batches=true",
        "--no-progress"]
HAS_TENSORBOARD = importlib.util.find_spec("tensorboard") is not None
HAS_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None


def _train(output, *argv: str) -> None:
    extra = ["--tensorboard"] if HAS_TENSORBOARD else []
    extra += ["--plot"] if HAS_MATPLOTLIB else ["--no-plot"]
    assert cli.main(["train", "--output-dir", str(output), *TINY, *extra, *argv]) == 0


def _tensorboard_steps(output) -> list[int]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(output / "tensorboard"))
    events.Reload()
    return sorted({event.step for event in events.Scalars("loss")})


def test_metrics_checkpoints_tensorboard_and_plot_agree_and_resume_continues(tmp_path, caplog):
    output = tmp_path / "run"
    _train(output, "--steps", "2")
    rows = read_metrics(output)
    assert [r["step"] for r in rows] == [1, 2]  # step N: the state after N RL updates
    assert "eval/success" in rows[0] and "eval/success" not in rows[1]  # the last step has the final eval
    # The warm start is step 0; step_00000002 holds the state after 2 updates.
    assert [p.name for p in list_checkpoints(output)] == ["step_00000000", "step_00000001", "step_00000002"]
    for path in list_checkpoints(output):
        assert json.loads((path / "manifest.json").read_text())["step"] == int(path.name.split("_")[1])
    assert sorted(p.name for p in (output / "batches").iterdir()) == ["step_000001.jsonl", "step_000002.jsonl"]
    with open(output / "metrics.csv", newline="") as fh:
        table = list(csv.DictReader(fh))
    assert [row["step"] for row in table] == ["1", "2"] and table[0]["eval/success"] != ""
    assert plot_steps(rows) == [1, 2]
    summary = json.loads((output / "summary.json").read_text())
    points = heldout_points(rows, {"after_sft": 0.5, "after": summary.get("after", 0.5)})
    assert [x for x, _ in points] == [0, 1, 2]  # after the warm start, the step-1 evaluation, the end
    if HAS_MATPLOTLIB:
        assert (output / "learning_curves.png").is_file()
    if HAS_TENSORBOARD:
        assert _tensorboard_steps(output) == [1, 2]

    # An interrupted checkpoint write left a temp dir; the resumed run removes it and numbers on from step 3.
    stale = output / "checkpoints" / ".tmp-step_00000003-12345"
    stale.mkdir()
    with caplog.at_level(logging.INFO, logger="teamgym"):
        _train(output, "--steps", "3", "--resume")
    assert not stale.exists() and "interrupted checkpoint write" in caplog.text
    assert "resumed from step 2" in caplog.text and "continuing with step 3" in caplog.text
    rows = read_metrics(output)
    assert [r["step"] for r in rows] == [1, 2, 3]
    assert list_checkpoints(output)[-1].name == "step_00000003"
    with open(output / "metrics.csv", newline="") as fh:
        assert [row["step"] for row in csv.DictReader(fh)] == ["1", "2", "3"]
    assert plot_steps(rows) == [1, 2, 3]
    if HAS_TENSORBOARD:
        assert _tensorboard_steps(output) == [1, 2, 3]


def test_a_fresh_run_removes_stale_checkpoint_writes(tmp_path):
    output = tmp_path / "run"
    stale = output / "checkpoints" / ".tmp-step_00000001-999"
    stale.mkdir(parents=True)
    assert cli.main(["train", "--output-dir", str(output), "--env-id", "sanity_bandit-v0", "--steps", "1",
                     "--sft-steps", "0", "--eval-tasks", "2", "--tasks-per-step", "2", "--tree-k", "2",
                     "--n-layer", "1", "--n-embd", "16", "--n-head", "1", "--no-progress", "--no-plot"]) == 0
    assert not stale.exists()
    assert [p.name for p in list_checkpoints(output)] == ["step_00000000", "step_00000001"]


def test_an_unknown_env_backend_is_refused(capsys):
    assert cli.main(["train", "--env-backend", "dask"]) == 2
    assert "env_backend='dask': expected one of local, ray" in capsys.readouterr().err


@pytest.mark.slow
def test_env_backend_ray_trains_with_env_actors(tmp_path):
    ray = pytest.importorskip("ray")
    from teamgym.rollout.ray_backend import RaySlots
    from teamgym.train.config import TrainConfig
    from teamgym.train.trainer import Trainer

    try:
        ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    except Exception as err:  # noqa: BLE001 - any failure to start Ray on this host is a reason to skip
        pytest.skip(f"ray cannot start here: {err}")
    try:
        config = TrainConfig.from_dict(dict(
            env_id="sanity_bandit-v0", env_backend="ray", steps=1, output_dir=str(tmp_path / "ray"), sft_steps=0,
            eval_tasks=2, tasks_per_step=2, k=2, n_layer=1, n_embd=16, n_head=1, progress_bar=False, plot=False))
        trainer = Trainer(config)
        try:
            assert isinstance(trainer.engine.slots, RaySlots)
            trainer.train()
            assert len(trainer.engine.slots.actors) > 0
        finally:
            trainer.close()
        assert [r["step"] for r in read_metrics(config.output_dir)] == [1]
    finally:
        ray.shutdown()
