"""The main job over several seeds: held-out success after the warm start and after RL, per seed and as means with
95% bootstrap confidence intervals, and the RL gain.

    python benchmarks/main_job_seeds.py                       # seeds 0-4, the README's main job (teamgym train)
    python benchmarks/main_job_seeds.py --seeds 0 1 -- --steps 40   # arguments after -- go to teamgym train
    python benchmarks/main_job_seeds.py --jobs 2                # two seeds at a time (one per core of a 2-core host)
    python benchmarks/main_job_seeds.py --output-dir ws -- --steps 0        # the warm starts alone, saved in ws/
    python benchmarks/main_job_seeds.py --warm-starts ws -- --ppo-lr 5e-5   # RL variants from them, no SFT re-run

Each seed is one ``python -m teamgym.train --seed N --output-dir DIR/seed_N`` run, one after the other, or ``--jobs``
at a time (the runs use one torch thread each; running them side by side changes their timings, not their numbers).
Prints a markdown table, then the host facts every run's ``summary.json`` records. ``--warm-starts DIR`` starts each
seed's RL from ``DIR/seed_N`` (``--warm-start-from``: the warm start's weights and its evaluations, so the table
reads as a full run's), which compares RL settings over the seeds at the cost of the RL alone; its times are then
the RL stage's.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _stats import bootstrap_ci  # noqa: E402

from teamgym.train.run_dir import STATE_FILE, checkpoint_path  # noqa: E402


def _cell(values: list[float]) -> str:
    low, high = bootstrap_ci(values)
    return f"{100 * np.mean(values):.1f} [{100 * low:.1f}, {100 * high:.1f}]"


def main() -> int:
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--output-dir", default=None, help="where the runs go (default: a new temp folder)")
    parser.add_argument("--jobs", type=int, default=1, help="seeds run at a time (default 1)")
    parser.add_argument("--warm-starts", type=Path, default=None,
                        help="a folder of earlier runs of this script (seed_N each): RL starts from their warm starts")
    args = parser.parse_args(argv)
    if args.warm_starts is not None:
        missing = [seed for seed in args.seeds
                   if not (checkpoint_path(args.warm_starts / f"seed_{seed}", 0) / STATE_FILE).is_file()]
        if missing:  # a full run keeps its last checkpoints only: its warm start (step 0) is gone
            parser.error(f"--warm-starts {args.warm_starts}: no saved warm start for seed(s) {missing} "
                         f"(seed_N/{checkpoint_path('', 0)}); make them with: python benchmarks/main_job_seeds.py "
                         f"--output-dir {args.warm_starts} "
                         f"--seeds {' '.join(map(str, missing))} -- --steps 0")
    root = Path(args.output_dir or tempfile.mkdtemp(prefix="teamgym-main-job-seeds-"))

    def run(seed: int) -> dict:
        out = root / f"seed_{seed}"
        tic = time.perf_counter()
        cmd = [sys.executable, "-m", "teamgym.train", "--seed", str(seed), "--output-dir", str(out),
               "--no-progress-bar", *extra]
        if args.warm_starts is not None:
            cmd += ["--warm-start-from", str(args.warm_starts / f"seed_{seed}")]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        summary = json.loads((out / "summary.json").read_text())
        summary["end_to_end_seconds"] = time.perf_counter() - tic
        print(f"seed {seed}: after SFT {summary['heldout_success_after_sft']:.3f} greedy / "
              f"{summary['heldout_sampled_success_after_sft']:.3f} sampled; after RL "
              f"{summary['heldout_success_after']:.3f} / {summary['heldout_sampled_success_after']:.3f} "
              f"({summary['end_to_end_seconds']:.0f} s)", file=sys.stderr, flush=True)
        return summary

    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        summaries = list(pool.map(run, args.seeds))
    rows = {
        "after the SFT warm start, greedy": [s["heldout_success_after_sft"] for s in summaries],
        "after RL, greedy": [s["heldout_success_after"] for s in summaries],
        "RL gain, greedy (points)": [s["heldout_success_after"] - s["heldout_success_after_sft"] for s in summaries],
        "after the SFT warm start, sampled": [s["heldout_sampled_success_after_sft"] for s in summaries],
        "after RL, sampled": [s["heldout_sampled_success_after"] for s in summaries],
        "RL gain, sampled (points)": [s["heldout_sampled_success_after"] - s["heldout_sampled_success_after_sft"]
                                      for s in summaries],
    }
    seeds = " / ".join(str(s) for s in args.seeds)
    print(f"| held-out success (%), {summaries[0]['heldout_tasks']} tasks | seeds {seeds} | mean [95% bootstrap CI] |")
    print("|---|---|---|")
    for name, values in rows.items():
        per_seed = " / ".join(f"{100 * v:.1f}" for v in values)
        print(f"| {name} | {per_seed} | {_cell(values)} |")
    spread = max(rows["after the SFT warm start, greedy"]) - min(rows["after the SFT warm start, greedy"])
    times = [s["end_to_end_seconds"] for s in summaries]
    print(f"\nwarm-start spread (greedy, max - min): {100 * spread:.1f} points; RL above the warm start on "
          f"{sum(g > 0 for g in rows['RL gain, greedy (points)'])} of {len(summaries)} seeds; end to end "
          f"{min(times):.0f}-{max(times):.0f} s per seed ({max(1, args.jobs)} at a time"
          f"{'; RL from saved warm starts' if args.warm_starts is not None else ''})")
    print(f"host: {json.dumps(summaries[0].get('host', {}))}")
    print(f"runs: {root}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
