"""Rollout throughput on the CPU tiny model: agent-turns per second and where the wall time goes.

Each configuration plays ``--tasks`` episodes with AT-GRPO tree sampling (K candidates per node), all in lockstep
(1 wave) or in waves whose env work overlaps the next wave's generation, and reports the share of wall time inside
``policy.generate`` versus outside it (env steps, the sandbox, snapshots, bookkeeping, waiting for the env thread).
Prints a markdown table.

    python benchmarks/rollout.py                      # plan_path-v0, 8 tasks, K = 4, 1 and 2 waves
    python benchmarks/rollout.py --env plan_path-v0 --tasks 16 --k 4 --max-tokens 40 --repeats 3
    python benchmarks/rollout.py --env plan_path-v1 --checkpoint runs/plan_path --max-tokens 0   # the main job's model

A random-init model writes ``max_tokens`` of noise at every node; a trained one writes short answers and programs
the env runs in the sandbox, so the env's share is much larger with ``--checkpoint``.
"""

from __future__ import annotations

import argparse
import json
import time
from functools import partial
from pathlib import Path

import torch

import teamgym
from teamgym.rollout import HFPolicy, LocalSlots, RolloutEngine, SamplingParams, TreeSampling
from teamgym.train.checkpoint import load_latest_checkpoint
from teamgym.train.presets import get_preset


def tiny_policy(n_layer: int, n_embd: int, checkpoint: str | None) -> HFPolicy:
    """The random-init tiny model, or the shared model of a ``teamgym train`` output dir's newest checkpoint."""
    if checkpoint is None:
        return HFPolicy.tiny(seed=0, n_layer=n_layer, n_embd=n_embd)
    config = json.loads((Path(checkpoint) / "config.json").read_text())
    policy = HFPolicy.tiny(seed=0, n_layer=config["n_layer"], n_embd=config["n_embd"], n_head=config["n_head"])
    policy.model.load_state_dict(load_latest_checkpoint(checkpoint)[1]["models"]["shared"])
    return policy


def measure(env_id: str, tasks: int, k: int, max_tokens: int, workers: int, waves: int, repeats: int,
            prompt_format: str, policy: HFPolicy) -> dict[str, float]:
    preset = get_preset(env_id, prompt_format)
    env_kwargs = dict(preset.env_kwargs)
    probe = teamgym.make(env_id, **env_kwargs)
    roles = list(probe.possible_agents)
    probe.close()
    slots = LocalSlots(partial(teamgym.make, env_id, **env_kwargs), preset.prompt, workers=workers)
    engine = RolloutEngine(slots, {r: policy for r in roles},
                           sampling=SamplingParams(max_tokens=max_tokens or preset.max_tokens), tree=TreeSampling(k=k),
                           seed=0, waves=waves)
    engine.rollout(list(range(tasks)))  # warm-up: env pools, sandbox servers, torch kernels
    totals = {"rows": 0, "tokens": 0, "generate": 0.0, "env": 0.0, "total": 0.0}
    for r in range(repeats):
        tic = time.perf_counter()
        result = engine.rollout([1000 * (r + 1) + i for i in range(tasks)])
        totals["total"] += time.perf_counter() - tic
        totals["rows"] += len(result.batch)
        totals["tokens"] += result.batch.num_tokens()
        totals["generate"] += result.generate_seconds
        totals["env"] += result.env_seconds
    engine.close()
    total = totals["total"]
    return {"agent_turns_per_s": totals["rows"] / total, "tokens_per_s": totals["tokens"] / total,
            "generate": totals["generate"] / total, "env": totals["env"] / total,
            "outside": 1 - totals["generate"] / total}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="plan_path-v0")
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=40, help="completion budget (0: the env preset's)")
    parser.add_argument("--workers", type=int, nargs="+", default=[0], help="env threads (0: none)")
    parser.add_argument("--waves", type=int, nargs="+", default=[1, 2],
                        help="waves (1: lockstep; 2+: env work overlaps generation)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--prompt-format", default="compact", choices=["compact", "env"])
    parser.add_argument("--n-layer", type=int, default=2)
    parser.add_argument("--n-embd", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    parser.add_argument("--checkpoint", help="a `teamgym train` output dir: use its trained model")
    parser.add_argument("--json", action="store_true", help="print one JSON list of rows (benchmarks/revisions.py)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    policy = tiny_policy(args.n_layer, args.n_embd, args.checkpoint)
    config = policy.model.config
    model = f"trained in {args.checkpoint}" if args.checkpoint else "random init"
    if args.json:
        rows = [{"waves": str(waves), "env threads": str(workers),
                 **measure(args.env, args.tasks, args.k, args.max_tokens, workers, waves, args.repeats,
                           args.prompt_format, policy)}
                for waves in args.waves for workers in args.workers]
        print(json.dumps(rows))
        return
    print(f"env `{args.env}`, {args.tasks} tasks x K={args.k}, max_tokens={args.max_tokens or 'preset'}, tiny GPT-2 "
          f"({config.n_layer} layers, width {config.n_embd}, {model}), {args.prompt_format} prompts, "
          f"{args.repeats} rollouts, torch threads={args.threads}\n")
    print("| waves | env threads | agent-turns/s | tokens/s | generate | env + sandbox | outside generation |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for waves in args.waves:
        for workers in args.workers:
            m = measure(args.env, args.tasks, args.k, args.max_tokens, workers, waves, args.repeats,
                        args.prompt_format, policy)
            print(f"| {waves} | {workers} | {m['agent_turns_per_s']:.1f} | {m['tokens_per_s']:.0f} "
                  f"| {100 * m['generate']:.1f}% | {100 * m['env']:.1f}%{' (overlapped)' if waves > 1 else ''} "
                  f"| {100 * m['outside']:.1f}% |")


if __name__ == "__main__":
    main()
