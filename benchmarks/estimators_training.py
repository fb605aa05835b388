"""Advantage estimators: the main job trained with each ``--algo`` the trainer accepts.

Every run is the embedded main job as it was measured (``teamgym train``'s defaults until 2026-12-04,
``_training.MEASURED_MAIN_JOB``: tiny GPT-2, 300 warm-start SFT steps on the scripted
oracle, then 80 RL steps on ``plan_path-v0`` 4x4 grids) with only ``algo`` changed, each estimator fed as its paper
defines (docs/algorithms.md), and ``dr_grpo`` with its paper's loss (``ppo.aggregation=seq-mean-token-sum-norm``).
``at_grpo`` samples 8 tasks x K = 4 candidates per (agent, turn) node; the trajectory estimators play each of the 8
tasks ``group_size`` = 4 times with one candidate per node (the same completions per step); ``treerl`` also
continues every unchosen candidate to the end (more completions: the table reports them). The SPO trackers draw
from their task pool. Reports held-out success (greedy and sampled, 200 tasks) after RL, completions per RL step and
the RL wall time.

    python benchmarks/estimators_training.py --seeds 0 1        # 11 estimators x 2 seeds, 1-4 minutes a run
    python benchmarks/estimators_training.py --algos at_grpo gigpo --steps 10 --seeds 0
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _training import MEASURED_STEPS, mean_cell, run_main_job, write_json  # noqa: E402

from teamgym.train.estimators import ESTIMATORS  # noqa: E402
from teamgym.train.update import PPOConfig  # noqa: E402

#: Settings an estimator's paper defines beside its advantage.
PAPER_SETTINGS = {"dr_grpo": {"ppo.aggregation": "seq-mean-token-sum-norm"}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algos", nargs="+", default=sorted(ESTIMATORS))
    parser.add_argument("--steps", type=int, default=MEASURED_STEPS)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--lr", type=float, default=PPOConfig.lr, help="learning rate of every run")
    parser.add_argument("--json", help="also write every run's numbers to this file")
    args = parser.parse_args()
    results: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for algo in args.algos:
            overrides = {"algo": algo, "ppo.lr": args.lr, **PAPER_SETTINGS.get(algo, {})}
            results[algo] = [run_main_job(overrides, seed, args.steps, Path(tmp) / f"{algo}-{seed}")
                             for seed in args.seeds]
            print(f"done: {algo}: " + ", ".join(
                f"seed {seed}: greedy {r['success']:.3f}, sampled {r['sampled']:.3f}, after the warm start "
                f"{r['sft']:.3f}, {r['completions']:.0f} completions per step, {r['rl_seconds']:.0f} RL seconds"
                for seed, r in zip(args.seeds, results[algo])), flush=True)
    print(f"\n{args.steps} RL steps after the warm start, seeds {args.seeds}; mean over seeds (per seed)\n")
    print("| `--algo` | held-out success (greedy) | sampled | completions per step | RL seconds |")
    print("|---|---:|---:|---:|---:|")
    for algo, runs in results.items():
        print(f"| `{algo}` | {mean_cell(runs, 'success')} | {mean_cell(runs, 'sampled')} "
              f"| {np.mean([r['completions'] for r in runs]):.0f} | {np.mean([r['rl_seconds'] for r in runs]):.0f} |")
    print(f"\nafter the warm start (same for every estimator): {[r['sft'] for r in next(iter(results.values()))]}")
    write_json(args.json, results)


if __name__ == "__main__":
    main()
