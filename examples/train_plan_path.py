"""Train a tool + planner team on plan_path-v0 with AT-GRPO, from Python, and read the results.

The warm start of ``teamgym train``'s defaults on plan_path-v0: a tiny character-level GPT-2 (built in code, no
download) plays both roles, trained first on the env's scripted oracle; then 80 steps of AT-GRPO with tree sampling
(with the defaults' failure replay and cosine learning rate) instead of the main job's 400 Turn-PPO steps on
plan_path-v1.

    python examples/train_plan_path.py                    # the full example (several minutes on 2 CPU cores)
    python examples/train_plan_path.py --steps 2 --sft-steps 5 --eval-tasks 4 --output-dir /tmp/demo   # smoke run
"""

from __future__ import annotations

import argparse
import json

from teamgym.rollout import RolloutEngine, SamplingParams, TreeSampling
from teamgym.train import TrainConfig, Trainer
from teamgym.train.metrics import read_metrics


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=80)
    parser.add_argument("--sft-steps", type=int, default=TrainConfig.sft_steps)
    parser.add_argument("--eval-tasks", type=int, default=TrainConfig.eval_tasks)
    parser.add_argument("--output-dir", default="runs/example_plan_path")
    args = parser.parse_args(argv)

    # 1. Every knob lives in one documented dataclass; bad values fail here, naming the field.
    config = TrainConfig(env_id="plan_path-v0", algo="at_grpo", steps=args.steps, sft_steps=args.sft_steps,
                         eval_tasks=args.eval_tasks, output_dir=args.output_dir, progress_bar=False)

    # 2. The trainer builds the policy, the rollout engine and the optimizers; train() runs (or resumes) the job.
    trainer = Trainer(config)
    summary = trainer.train()

    # 3. One tree-sampled rollout with the trained policy: every row is one candidate of one (agent, turn) node.
    engine: RolloutEngine = trainer.engine
    result = engine.rollout([7, 8], tree=TreeSampling(k=4), sampling=SamplingParams(max_tokens=40))
    for row in result.batch.rows()[:8]:
        print(f"{row['episode_id']} {row['agent']:>7} turn {row['turn']} branch {row['branch']} "
              f"chosen={row['chosen']!s:5} reward={row['rewards']:+.2f} {row['text']!r}")
    engine.close()

    # 4. metrics.jsonl has one row per step; summary.json has the before/after numbers.
    last = read_metrics(config.output_dir)[-1]
    print(f"last step: success={last['success']:.2f} reward={last['reward/mean']:+.2f}")
    print(json.dumps(summary, indent=2))
    return summary


if __name__ == "__main__":
    main()
