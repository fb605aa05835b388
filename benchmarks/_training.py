"""Shared by the training comparisons: run the main job with some config fields changed and read its results."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from teamgym.train import TrainConfig, train
from teamgym.train.config import ADDED_FIELDS
from teamgym.train.metrics import read_metrics

#: The main job these comparisons were measured with (docs/benchmarks.md): the ``teamgym train`` defaults until
#: 2026-12-04 (a width-64 model, 300 constant-rate SFT steps on 300 tasks, AT-GRPO), kept so that their tables
#: reproduce; the defaults since are the steadier warm start and Turn-PPO (docs/training.md, "Results"), and since
#: 2026-12-07 on plan_path-v1 with 400 steps, failure replay and a cosine learning rate.
MEASURED_MAIN_JOB: dict[str, Any] = {"n_embd": 64, "n_head": 2, "sft_steps": 300, "sft_tasks": 300,
                                     "sft_schedule": "constant", "algo": "at_grpo", "group_size": 4,
                                     "env_id": "plan_path-v0", "eval_every": 20, **ADDED_FIELDS}
#: The RL steps these comparisons ran (the main job's default until 2026-12-07).
MEASURED_STEPS = 80


def run_main_job(overrides: dict[str, Any], seed: int, steps: int, output_dir: Path) -> dict[str, Any]:
    """The main job these tables were measured with (:data:`MEASURED_MAIN_JOB`) with ``overrides``: held-out
    success after the warm start and after RL (greedy and sampled), the mean team term over the last quarter of RL,
    RL wall seconds, completions per RL step, alphas used."""
    config = TrainConfig.from_dict({**MEASURED_MAIN_JOB, **overrides, "seed": seed, "steps": steps,
                                    "output_dir": str(output_dir), "progress_bar": False, "plot": False,
                                    "checkpoint_every": max(steps, 1)})
    summary = train(config)
    rows = read_metrics(output_dir)
    tail = rows[-max(1, len(rows) // 4):]
    team = [np.mean([v for k, v in r.items() if k.startswith("reward/") and k.endswith("/team")]) for r in tail]
    return {"success": summary["heldout_success_after"], "sampled": summary["heldout_sampled_success_after"],
            "sft": summary["heldout_success_after_sft"], "team_tail": float(np.mean(team)),
            "rl_seconds": float(sum(r["step_seconds"] for r in rows)),
            "completions": float(np.mean([r["completions"] for r in rows])),
            "picks": Counter(r[k] for r in rows for k in r if k.startswith("alpha/"))}


def mean_cell(runs: list[dict[str, Any]], key: str) -> str:
    """``"mean (seed values)"`` of ``key`` over a setting's runs, for a markdown table."""
    return f"{np.mean([r[key] for r in runs]):.3f} ({', '.join(f'{r[key]:.3f}' for r in runs)})"


def write_json(path: str | None, results: dict[str, list[dict[str, Any]]]) -> None:
    """Every run's numbers as JSON (when ``path`` is given)."""
    if path:
        Path(path).write_text(json.dumps({k: [{**r, "picks": dict(r["picks"])} for r in v] for k, v in results.items()},
                                         indent=2, default=str))
