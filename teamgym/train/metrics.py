"""Metrics: each RL step's row (:func:`step_metrics`, keys in docs/training.md), one JSON row per step in
``metrics.jsonl`` (rewritten safely on resume) and the same rows in ``metrics.csv``, optional TensorBoard / W&B, and
the learning-curve plot written at the end of a run. Step N is the state after N RL updates (the first row is step 1)
in every one of them."""

from __future__ import annotations

import csv
import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from teamgym.algos import advantage_energy_per_completion, informative_groups_per_1000
from teamgym.errors import DependencyNotInstalled
from teamgym.rollout.engine import RolloutResult
from teamgym.train.columns import batch_columns
from teamgym.train.update import UpdateStats

__all__ = ["MetricsLogger", "heldout_points", "plot_learning_curves", "plot_steps", "read_metrics", "step_metrics"]

METRICS_FILE = "metrics.jsonl"
CSV_FILE = "metrics.csv"


def read_metrics(output_dir: str | Path) -> list[dict[str, Any]]:
    """The rows of ``metrics.jsonl`` (a torn last line from a crash is ignored)."""
    path = Path(output_dir) / METRICS_FILE
    if not path.exists():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


def step_metrics(step: int, result: RolloutResult, advantages: torch.Tensor, stats: UpdateStats, *, rollout: str,
                 gamma: float, seconds: float, update_seconds: float, dropped: int) -> dict[str, Any]:
    """The ``metrics.jsonl`` row of one RL step (docs/training.md, "Outputs", lists the keys).

    Args:
        step: the step number: N for the rollout and update that make the state after N RL updates (1-based).
        result: the step's rollout (its whole batch, infrastructure errors included).
        advantages: ``(N,)`` the advantages of the rows trained on.
        stats: the last epoch's update statistics.
        rollout: ``"tree"`` or ``"trajectory"``.
        gamma: the trajectory returns' discount (for ``informative_groups_per_1000`` and ``advantage_energy``).
        seconds: the step's wall time; update_seconds: its update's.
        dropped: rows dropped for infrastructure errors.
    """
    batch = result.batch
    row: dict[str, Any] = {"step": step, "success": result.success_rate,
                           "reward/mean": float(batch.rewards.mean()) if len(batch) else 0.0}
    # reward/<agent>/...: the agent's own-step terms averaged over its candidates (what its tree groups compare);
    # return/<agent>: everything it received per episode, on other agents' steps too (the env's summaries).
    for agent in sorted(set(batch.agent)):
        rows = [i for i, a in enumerate(batch.agent) if a == agent]
        row[f"reward/{agent}/mixed"] = float(batch.rewards[rows].mean())
        names = sorted({k for i in rows for k in batch.reward_terms[i]})
        for name in names:
            row[f"reward/{agent}/{name}"] = float(np.mean([batch.reward_terms[i].get(name, 0.0) for i in rows]))
        returns = [e["returns"][agent] for e in result.episodes if agent in e.get("returns", {})]
        if returns:
            row[f"return/{agent}"] = float(np.mean(returns))
    if advantages.numel():
        row.update({"advantage/mean": float(advantages.mean()), "advantage/std": float(advantages.std()) if
                    advantages.numel() > 1 else 0.0, "advantage/min": float(advantages.min()),
                    "advantage/max": float(advantages.max())})
    row["informative_groups_per_1000"], row["advantage_energy"] = _group_signal(result, rollout, gamma)
    row.update({"loss": stats.loss, "kl": stats.kl, "entropy": stats.entropy, "clip_fraction": stats.clip_fraction,
                "grad_norm": stats.grad_norm, "completions": result.completions,
                "completion_tokens": result.completion_tokens,
                "tokens_per_s": batch.num_tokens() / max(result.total_seconds, 1e-9),
                "env_time_share": result.env_seconds / max(seconds, 1e-9),
                "generate_time_share": result.generate_seconds / max(seconds, 1e-9),
                "update_time_share": update_seconds / max(seconds, 1e-9),
                "step_seconds": seconds, "dropped_infra_rows": dropped})
    if stats.kl_reference is not None:
        row["kl_reference"] = stats.kl_reference
    return row


def _group_signal(result: RolloutResult, rollout: str, gamma: float) -> tuple[float, float]:
    """``(informative groups per 1,000 completions, advantage energy per completion)`` of the rollout's groups: tree
    nodes over the rows' rewards, or tasks over their trajectories' returns (trajectory rollouts)."""
    batch = result.batch
    if not len(batch):
        return 0.0, 0.0
    if rollout == "tree":
        rewards, groups = batch.rewards, batch.node_ids()
    else:
        columns = batch_columns(batch, ("episode_returns", "task_ids"), rollout="trajectory", gamma=gamma)
        rewards, groups = columns["episode_returns"], columns["task_ids"]
    return informative_groups_per_1000(rewards, groups), advantage_energy_per_completion(rewards, groups)


class MetricsLogger:
    """Append per-step rows to ``metrics.jsonl`` and mirror them to TensorBoard / W&B when asked.

    Args:
        output_dir: the run directory.
        resume_step: steps already completed by the checkpoint being resumed: rows with ``step > resume_step`` (written
            after that checkpoint, before a crash) are dropped so that no step appears twice.

    ``metrics.csv`` holds the same rows: its columns are every key seen so far, in order of first appearance; a row
    with a new key (``eval/success`` on evaluation steps...) rewrites the file with the wider header, so every line
    has the header's columns (empty where a row has no value).
        tensorboard, wandb: mirror rows to these backends.
        run_config: stored with the W&B run.
    """

    def __init__(self, output_dir: str | Path, *, resume_step: int = 0, tensorboard: bool = False,
                 wandb: bool = False, run_config: Mapping[str, Any] | None = None):
        self.path = Path(output_dir) / METRICS_FILE
        kept = [r for r in read_metrics(output_dir) if r.get("step", math.inf) <= resume_step]
        tmp = self.path.with_suffix(".jsonl.tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            for row in kept:
                fh.write(json.dumps(row) + "\n")
        os.replace(tmp, self.path)
        self.csv_path = Path(output_dir) / CSV_FILE
        self._columns: list[str] = []
        self._rewrite_csv(kept)
        self._tb = None
        self._wandb = None
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError:
                raise DependencyNotInstalled("tensorboard", "tensorboard", "TensorBoard logging") from None
            self._tb = SummaryWriter(str(Path(output_dir) / "tensorboard"))
        if wandb:
            try:
                import wandb as wandb_module
            except ImportError:
                raise DependencyNotInstalled("wandb", "wandb", "W&B logging") from None
            self._wandb = wandb_module.init(project="teamgym", dir=str(output_dir), config=dict(run_config or {}),
                                            resume="allow")

    def log(self, row: Mapping[str, Any]) -> None:
        """Append one row (flushed and fsynced: a crash right after it keeps it)."""
        clean = {k: _json_number(v) for k, v in row.items()}
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(clean) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        if any(key not in self._columns for key in clean):
            self._rewrite_csv(read_metrics(self.path.parent))
        else:
            with open(self.csv_path, "a", encoding="utf-8", newline="") as fh:
                csv.DictWriter(fh, self._columns).writerow(clean)
        step = int(clean["step"])
        numbers = {k: v for k, v in clean.items() if isinstance(v, (int, float)) and k != "step"}
        if self._tb is not None:
            for key, value in numbers.items():
                self._tb.add_scalar(key, value, step)
        if self._wandb is not None:
            self._wandb.log(numbers, step=step)

    def _rewrite_csv(self, rows: list[dict[str, Any]]) -> None:
        """Write ``metrics.csv`` from ``rows`` with a header of every key they hold (atomically)."""
        for row in rows:
            self._columns += [key for key in row if key not in self._columns]
        tmp = self.csv_path.with_suffix(".csv.tmp")
        with open(tmp, "w", encoding="utf-8", newline="") as fh:
            writer = csv.DictWriter(fh, self._columns)
            writer.writeheader()
            writer.writerows(rows)
        os.replace(tmp, self.csv_path)

    def close(self) -> None:
        if self._tb is not None:
            self._tb.close()
        if self._wandb is not None:
            self._wandb.finish()


def _json_number(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _smooth(values: list[float], window: int = 10) -> list[float]:
    out, total = [], 0.0
    for i, value in enumerate(values):
        total += value
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


def plot_steps(rows: list[dict[str, Any]]) -> list[int]:
    """The plot's x values of ``metrics.jsonl`` rows: their ``step`` (the state after that many RL updates)."""
    return [int(r["step"]) for r in rows]


def heldout_points(rows: list[dict[str, Any]], evals: Mapping[str, float | None], *,
                   sampled: bool = False) -> list[tuple[int, float]]:
    """The held-out success curve, ``(step, success)``: after the warm start at step 0, every ``eval_every`` steps
    (the rows' ``eval/success``), and the final evaluation at the last step."""
    suffix, key = ("_sampled", "eval/sampled_success") if sampled else ("", "eval/success")
    steps = plot_steps(rows)
    points = [(0, evals.get(f"after_sft{suffix}"))]
    points += [(step, r.get(key)) for step, r in zip(steps, rows) if r.get(key) is not None]
    points.append((steps[-1] if steps else 0, evals.get(f"after{suffix}")))
    return [(x, y) for x, y in points if y is not None]


def plot_learning_curves(output_dir: str | Path, *, evals: Mapping[str, float | None] | None = None) -> Path:
    """Write ``learning_curves.png``: reward per agent, training and held-out success, entropy and KL.

    ``evals`` holds the held-out numbers outside the RL loop (``before``, ``after_sft``, ``after`` and their
    ``*_sampled`` twins); they are drawn at step 0 (after the warm start) and at the last step.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise DependencyNotInstalled("matplotlib", "plot", "the learning-curve plot") from None
    rows = read_metrics(output_dir)
    evals = dict(evals or {})
    steps = plot_steps(rows)
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    reward_keys = sorted(k for k in (rows[0] if rows else {}) if k.startswith("reward/") and k.endswith("/mixed"))
    for key in reward_keys:
        axes[0].plot(steps, _smooth([r.get(key) or 0.0 for r in rows]), label=key.split("/")[1])
    axes[0].set_title("mean reward per agent, all candidates (10-step mean)")
    axes[0].set_xlabel("RL step")
    if reward_keys:  # a warm-start-only run (steps=0) has no RL rows
        axes[0].legend()
    axes[1].plot(steps, _smooth([r.get("success") or 0.0 for r in rows]), alpha=0.5,
                 label="training episodes (10-step mean; a tree: its chosen path)")
    for suffix, label in (("", "greedy"), ("_sampled", "sampled")):
        points = heldout_points(rows, evals, sampled=bool(suffix))
        if points:
            axes[1].plot(*zip(*points, strict=True), "o-", label=f"held-out, {label}")
    if evals.get("before") is not None:
        axes[1].axhline(evals["before"], linestyle=":", color="gray", label="held-out before training (random init)")
    if evals.get("after_sft") is not None:
        axes[1].axhline(evals["after_sft"], linestyle="--", color="tab:blue", alpha=0.6,
                        label="held-out after the warm start, greedy (the level RL must beat)")
    axes[1].set_ylim(-0.02, 1.02)
    axes[1].set_title("success rate (step 0 = after the SFT warm start)")
    axes[1].set_xlabel("RL step")
    axes[1].legend(fontsize=7, loc="lower right")
    axes[2].plot(steps, [r.get("entropy") for r in rows], label="entropy per token")
    axes[2].plot(steps, [r.get("kl") for r in rows], label="k3 KL to the sampler")
    axes[2].set_title("policy statistics")
    axes[2].set_xlabel("RL step")
    axes[2].legend()
    fig.tight_layout()
    path = Path(output_dir) / "learning_curves.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
