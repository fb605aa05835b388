"""Agent-turns per second of ``math_tool-v0`` and ``discussion-v0`` under their scripted policies.

An agent-turn is one ``step`` with a completion (dead steps are not counted). The time covers ``reset``, prompt
building, answer checking and, for ``math_tool-v0``, one sandboxed program per tool step; policies are scripted, so
this is the env's own cost per sample. Prints a markdown table.

Usage::

    PYTHONPATH=. python benchmarks/math_discussion_throughput.py --episodes 200
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import teamgym


def measure(env_id: str, policy_name: str, episodes: int, kwargs: dict[str, Any]) -> dict[str, float]:
    """Play ``episodes`` seeded episodes with one scripted policy for every agent; returns throughput numbers."""
    env = teamgym.make(env_id, **kwargs)
    base = env.unwrapped
    turns = successes = 0
    start = time.perf_counter()
    for seed in range(episodes):
        env.reset(seed=seed)
        policies = {a: base.scripted_policy(a, policy_name) for a in base.possible_agents}
        summary: dict[str, Any] = {}
        while env.agents:
            agent = env.agent_selection
            if env.terminations[agent] or env.truncations[agent]:
                summary = env.infos[agent].get("teamgym_episode", summary)
                env.step(None)
                continue
            env.step(policies[agent](env.observe(agent)))
            turns += 1
        successes += bool(summary.get("success"))
    elapsed = time.perf_counter() - start
    env.close()
    return {"turns": turns, "seconds": elapsed, "turns_per_s": turns / elapsed, "episodes_per_s": episodes / elapsed,
            "success": successes / episodes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=200, help="episodes per (env, policy) row")
    args = parser.parse_args()
    rows = [
        ("math_tool-v0", "oracle", {}),
        ("math_tool-v0", "random", {}),
        ("discussion-v0", "oracle", {}),
        ("discussion-v0", "random", {}),
        ("discussion-v0", "random", {"num_agents": 5, "rounds": 3}),
    ]
    teamgym.make("math_tool-v0").close()
    from teamgym.sandbox import run_python

    run_python("pass")  # start the sandbox's servers before timing
    print("| env | options | policy | episodes | agent-turns | agent-turns/s | episodes/s | success |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for env_id, policy_name, kwargs in rows:
        result = measure(env_id, policy_name, args.episodes, kwargs)
        options = ", ".join(f"{k}={v}" for k, v in kwargs.items()) or "defaults"
        print(f"| {env_id} | {options} | {policy_name} | {args.episodes} | {result['turns']} | "
              f"{result['turns_per_s']:.0f} | {result['episodes_per_s']:.1f} | {result['success']:.2f} |")


if __name__ == "__main__":
    main()
