"""Train one selector per role with Tianshou (DQN) or RLlib (PPO) on a candidate-choice teamgym env.

A scripted proposer writes k=4 candidates per agent-turn (the tool: a search program, a random-moves program, a
crashing program, no code; the planner: adopt the tool's plan, random moves, no plan); each role learns which to
play from hashed n-gram features, with the env's own rewards. Held-out team success is printed against picking a
random candidate, on 200 tasks no training reset draws. Needs ``pip install 'teamgym[tianshou]'`` or
``'teamgym[rllib]'`` (both in the venv ``bash scripts/test_marl.sh`` makes: ``.venv-marl/bin/python``).

    python examples/marl_candidates.py --library tianshou --env plan_path-v0 --seeds 0 1 2
    python examples/marl_candidates.py --library rllib --env plan_path-v0 --seeds 0
    python examples/marl_candidates.py --library tianshou --epochs 1 --steps-per-epoch 100 --tasks 10  # smoke run
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from teamgym.integrations.marl import candidate_env, random_choice, success_rate


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", choices=["tianshou", "rllib"], default="tianshou")
    parser.add_argument("--env", default="plan_path-v0", help="plan_path-v0, sokoban-v0 or sudoku-v0")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--k", type=int, default=4, help="candidates per agent-turn")
    parser.add_argument("--max-turns", type=int, default=2)
    parser.add_argument("--tasks", type=int, default=200, help="held-out tasks evaluated")
    parser.add_argument("--epochs", type=int, default=2, help="Tianshou: epochs")
    parser.add_argument("--steps-per-epoch", type=int, default=1000, help="Tianshou: env steps per epoch")
    parser.add_argument("--iterations", type=int, default=3, help="RLlib: PPO iterations")
    args = parser.parse_args(argv)

    def make_env():
        return candidate_env(args.env, k=args.k, max_turns=args.max_turns)

    held_out = range(2**31, 2**31 + args.tasks)  # training resets draw task ids below 2**31
    rows = []
    for seed in args.seeds:
        np.random.seed(seed)  # Tianshou's epsilon-greedy exploration draws from NumPy's global generator
        start = time.perf_counter()
        if args.library == "tianshou":
            from teamgym.integrations.tianshou import SelectorConfig, train_selectors

            config = SelectorConfig(seed=seed, epochs=args.epochs, steps_per_epoch=args.steps_per_epoch)
            selectors = train_selectors(make_env, config)
        else:
            from teamgym.integrations.rllib import PPOSettings, train_ppo

            selectors = train_ppo(make_env, PPOSettings(seed=seed, iterations=args.iterations))
        seconds = time.perf_counter() - start
        row = {
            "library": args.library,
            "env": args.env,
            "seed": seed,
            "learned": success_rate(make_env, selectors.choose, held_out),
            "random": success_rate(make_env, random_choice(seed, args.k), held_out),
            "train_seconds": round(seconds, 1),
        }
        print(row, flush=True)
        rows.append(row)
    return rows


if __name__ == "__main__":
    main()
