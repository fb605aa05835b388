"""benchmarks/failure_breakdown.py: it replays a run's own greedy held-out evaluation (the same successes) and reads
the tool's and the planner's plans."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load():
    spec = importlib.util.spec_from_file_location("failure_breakdown", ROOT / "benchmarks" / "failure_breakdown.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["failure_breakdown"] = module
    spec.loader.exec_module(module)
    return module


breakdown = _load()


def test_plans_are_read_from_tool_programs_and_planner_answers_by_the_envs_parser():
    from teamgym.envs.planning.parsing import parse_moves

    assert breakdown._plan("```\nprint('Actions: U,R,R')\n```", parse_moves) == ["U", "R", "R"]
    assert breakdown._plan("Actions: D,L", parse_moves) == ["D", "L"]
    assert breakdown._plan("Actions: UURD", parse_moves) == ["U", "U", "R", "D"]  # as the env reads a run of moves
    assert breakdown._plan("```\nprint(1/0)\n```", parse_moves) is None  # not a literal program: not run here
    assert breakdown._plan("no plan at all", parse_moves) is None


def test_counts_match_the_runs_own_greedy_evaluation(tmp_path):
    from teamgym.train import TrainConfig, train

    run = tmp_path / "run"
    # the width-64 warm start of earlier defaults, short: it solves a few of these 12 tasks (2 on this seed)
    config = TrainConfig.from_dict({"env_id": "plan_path-v0", "n_embd": 64, "n_head": 2, "sft_steps": 300,
                                    "sft_tasks": 300, "eval_tasks": 12, "steps": 0, "seed": 0, "plot": False,
                                    "progress_bar": False, "output_dir": str(run)})
    summary = train(config)
    row = breakdown.breakdown(run, 0)
    assert row["episodes"] == 12 and row["step"] == 0 and row["env_id"] == "plan_path-v0"
    assert row["success"] == round(12 * summary["heldout_success_after_sft"]) >= 1  # the run's own greedy number
    assert row["tool_right"] >= 1 and set(row["tool_plan_lengths"]) != {"-1"}  # its plans were read
    assert row["rescued"] - row["lost"] == row["success"] - row["tool_right"]
    assert sum(row["tool_plan_lengths"].values()) == 12 and 0 <= row["planner_copies"] <= 12
    # a weak warm start walks into walls and, seeing the same board, answers the same plan (8 of its 10 failures)
    assert row["failed"] == 12 - row["success"] and 1 <= row["repeated"] <= row["failed"]
    # greedy decoding answers a repeated prompt as before, so every such episode wrote the same answer twice
    assert row["repeated"] <= row["same_answer"] <= row["failed"]
    assert json.loads(json.dumps(row)) == row


def test_a_run_without_tool_and_planner_is_refused(tmp_path):
    from teamgym.train import TrainConfig, train

    run = tmp_path / "bandit"
    train(TrainConfig.from_dict({"env_id": "sanity_bandit-v0", "sft_steps": 0, "steps": 0, "eval_tasks": 2,
                                 "plot": False, "progress_bar": False, "output_dir": str(run)}))
    with pytest.raises(SystemExit, match="not a planning env"):
        breakdown.breakdown(run, 0)
