"""Smoke test of the example script at a tiny budget."""

from __future__ import annotations

import importlib.util
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "train_plan_path.py"


def test_example_runs_at_a_tiny_budget(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("train_plan_path", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    summary = module.main(["--steps", "1", "--sft-steps", "2", "--eval-tasks", "2", "--output-dir",
                           str(tmp_path / "run")])
    assert summary["steps"] == 1 and summary["heldout_success_before"] is not None
    assert "branch" in capsys.readouterr().out
