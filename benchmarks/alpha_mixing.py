"""Reward mixing at equal budget: static alpha in {0, 0.5, 1, 2} against the bandit over alpha (ALGORITHMS.md gap 3).

Every run is the embedded main job as it was measured (``teamgym train``'s defaults until 2026-12-04,
``_training.MEASURED_MAIN_JOB``: tiny GPT-2, 300 warm-start SFT steps on the scripted
oracle, then AT-GRPO on ``plan_path-v0`` 4x4 grids, 8 tasks x K = 4 per step) with only the reward mixer changed, so
all runs spend the same number of completions and updates. The advantages see ``alpha * team + local`` and the tree
advances on the same rewards; the bandit's alpha is credited with the team return of the rollout that follows its
update (docs/training.md). Reports held-out success (greedy and sampled, 200 tasks) after RL, the mean team term
over the last quarter of training, and for the bandit how often it picked each alpha.

    python benchmarks/alpha_mixing.py --seeds 0 1            # 5 mixers x 2 seeds, about 2 minutes a run
    python benchmarks/alpha_mixing.py --steps 10 --seeds 0   # a quick look
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _training import MEASURED_STEPS, mean_cell, run_main_job, write_json  # noqa: E402

from teamgym.train.update import PPOConfig  # noqa: E402

MIXERS = [("static", 0.0), ("static", 0.5), ("static", 1.0), ("static", 2.0), ("bandit", 1.0)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=MEASURED_STEPS)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--lr", type=float, default=PPOConfig.lr, help="learning rate of every run")
    parser.add_argument("--json", help="also write every run's numbers to this file")
    args = parser.parse_args()
    results: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for mixer, alpha in MIXERS:
            label = f"static alpha = {alpha:g}" if mixer == "static" else "bandit over {0, 0.5, 1, 2}"
            overrides = {"alpha": alpha if mixer == "static" else mixer, "ppo.lr": args.lr}
            results[label] = [run_main_job(overrides, seed, args.steps, Path(tmp) / f"{mixer}-{alpha}-{seed}")
                              for seed in args.seeds]
            print(f"done: {label}: {[(r['success'], r['sampled']) for r in results[label]]}", flush=True)
    print(f"\n{args.steps} AT-GRPO steps after the warm start, seeds {args.seeds}; mean over seeds (per seed)\n")
    print("| reward mixer | held-out success (greedy) | sampled | team term, last quarter | alphas picked |")
    print("|---|---:|---:|---:|---|")
    for label, runs in results.items():
        picks = sum((r["picks"] for r in runs), Counter()) if label.startswith("bandit") else Counter()
        total = sum(picks.values()) or 1
        shown = ", ".join(f"{a:g}: {100 * n / total:.0f}%" for a, n in sorted(picks.items())) or "-"
        print(f"| {label} | {mean_cell(runs, 'success')} | {mean_cell(runs, 'sampled')} "
              f"| {np.mean([r['team_tail'] for r in runs]):.3f} | {shown} |")
    print(f"\nafter the warm start (same for every mixer): {[r['sft'] for r in next(iter(results.values()))]}")
    write_json(args.json, results)


if __name__ == "__main__":
    main()
