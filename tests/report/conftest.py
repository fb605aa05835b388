"""Runs the report tests read: a real 2-step training run of the main job's env, saved with its batches."""

from __future__ import annotations

import pytest

from teamgym.cli import main


@pytest.fixture(scope="session")
def tree_run(tmp_path_factory):
    """``teamgym train --steps 2 --set save_batches=true`` (plan_path-v0, AT-GRPO tree, K = 4, the width-64 model; a
    short warm start so that the model writes plans) and ``teamgym inspect`` of it: the run directory, with
    ``report.html`` inside."""
    run = tmp_path_factory.mktemp("tree_run")
    status = main(
        [
            "train",
            "--steps",
            "2",
            "--set",
            "save_batches=true",
            "--output-dir",
            str(run),
            "--algo",
            "at_grpo",
            "--n-embd",
            "64",
            "--n-head",
            "2",
            "--sft-steps",
            "40",
            "--sft-tasks",
            "300",
            "--sft-schedule",
            "constant",
            "--eval-tasks",
            "4",
            "--tasks-per-step",
            "6",
            "--no-progress",
            "--no-plot",
        ]
    )
    assert status == 0
    assert main(["inspect", str(run)]) == 0
    return run
