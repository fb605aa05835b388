"""``teamgym train`` refuses what a user got wrong before importing torch and before creating any folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from teamgym import cli
from teamgym.train.cli import _report

ROOT = Path(__file__).resolve().parents[2]

#: `teamgym train ARGS` in a fresh interpreter, then whether it imported torch (which takes seconds, 20 s cold).
PROBE = "import sys\nfrom teamgym.cli import main\nstatus = main(sys.argv[1:])\nprint('torch' in sys.modules)\n" \
        "sys.exit(status)"


def _train(*argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", PROBE, "train", *argv], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--steps", "-1"], "steps=-1: expected an int >= 0"),
        (["--set", "nope=1"], "unknown config field 'nope': no field is close"),
        (["--tree-strategy", "adaptive", "--tree-k0", "6"], "tree.k0=6, tree.k=4, tree.k_max=8"),
        (["--ppo-aggregation", "sum"], "ppo.aggregation='sum'"),
        (["--vllm-engines", "2"], "apply to sampling.backend='vllm' only"),
        (["--set", "role_adapters=true", "--no-shared-model"], "role_adapters=True with shared_model=False"),
    ],
)
def test_a_bad_config_is_refused_before_torch_is_imported(tmp_path, argv, message):
    result = _train(*argv, "--output-dir", str(tmp_path / "run"))
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert result.stdout.split() == ["False"], "torch was imported before the config was checked"
    assert not (tmp_path / "run").exists()


def test_a_used_run_folder_is_refused_before_torch_is_imported(tmp_path):
    (tmp_path / "run" / "checkpoints" / "step_00000002").mkdir(parents=True)
    result = _train("--output-dir", str(tmp_path / "run"))
    assert result.returncode == 2 and "already holds checkpoints of a run: pass --resume" in result.stderr
    assert result.stdout.split() == ["False"]
    (tmp_path / "file").write_text("")
    result = _train("--output-dir", str(tmp_path / "file"))
    assert result.returncode == 2 and "is a file: choose a folder" in result.stderr


def test_cuda_without_cuda_is_a_clean_error_before_anything_is_built(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert cli.main(["train", "--device", "cuda", "--output-dir", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "teamgym train: error: config field device='cuda'" in err and "use --device cpu" in err
    assert not (tmp_path / "run").exists()


def test_the_report_names_the_run_folder():
    summary = {"heldout_tasks": 2, "env_id": "relay-v0", "steps": 1, "algo": "at_grpo", "sft_steps": 0,
               "heldout_success_before": 0.0, "heldout_sampled_success_before": 0.0, "heldout_success_after": 0.5,
               "heldout_sampled_success_after": 0.5, "wall_seconds": 3.0, "output_dir": "runs/demo"}
    assert "run folder: runs/demo (metrics.jsonl, checkpoints/, summary.json; `teamgym inspect runs/demo`)" in (
        _report(summary))

