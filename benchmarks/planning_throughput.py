"""Agent-turns per second of the planning envs under their scripted policies; prints a markdown table.

An agent-turn is one ``step`` with a completion (dead steps are not counted). Every tool turn runs one program
in the sandbox, so the numbers measure the env plus the sandbox. ``oracle`` is the oracle tool (a search
program run in the sandbox) with the ``copy_tool`` planner; ``random`` is the random tool with the random
planner.

Usage, from the repository root::

    PYTHONPATH=. python benchmarks/planning_throughput.py --episodes 100
"""

from __future__ import annotations

import argparse
import platform
import time
from typing import Any

import teamgym
from teamgym.sandbox import run_python
from teamgym.testing import play_episode

CONFIGS: list[tuple[str, dict[str, Any]]] = [
    ("plan_path-v0", {}),
    ("plan_path-v0", {"size": 10, "obstacle_density": 0.3}),
    ("sudoku-v0", {}),
    ("sudoku-v0", {"size": 9, "difficulty": "hard"}),
    ("sokoban-v0", {}),
    ("sokoban-v0", {"size": 8, "num_boxes": 3}),
]
POLICIES = {"oracle": ("oracle", "copy_tool"), "random": ("random", "random")}


def measure(env_id: str, kwargs: dict[str, Any], policy: str, episodes: int) -> dict[str, Any]:
    """Play ``episodes`` episodes (seeds 0..episodes-1) and time them, resets included."""
    env = teamgym.make(env_id, **kwargs)
    tool_name, planner_name = POLICIES[policy]
    base = env.unwrapped
    policies = {
        "tool": base.scripted_policy("tool", tool_name),
        "planner": base.scripted_policy("planner", planner_name),
    }
    turns = successes = 0
    start = time.perf_counter()
    for seed in range(episodes):
        rows = play_episode(env, lambda agent, obs, info: policies[agent](obs), seed=seed)
        turns += len(rows)
        successes += bool(rows[-1]["infos"][rows[-1]["agent"]]["teamgym_episode"]["success"])
    elapsed = time.perf_counter() - start
    return {"turns": turns, "seconds": elapsed, "success": successes / episodes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=100, help="episodes per env, options and policy")
    args = parser.parse_args()
    run_python("pass")  # start the sandbox's warm fork servers before timing
    print(f"Python {platform.python_version()}, {args.episodes} episodes per row\n")
    print("| env | options | policy | episodes | agent-turns | agent-turns/s | episodes/s | success |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for env_id, kwargs in CONFIGS:
        options = ", ".join(f"{k}={v}" for k, v in kwargs.items()) or "defaults"
        for policy in POLICIES:
            result = measure(env_id, kwargs, policy, args.episodes)
            print(
                f"| {env_id} | {options} | {policy} | {args.episodes} | {result['turns']} | "
                f"{result['turns'] / result['seconds']:.0f} | {args.episodes / result['seconds']:.1f} | "
                f"{result['success']:.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
