"""Throughput of ``coder_tester-v0`` with scripted policies: episodes/s, agent-turns/s, sandbox time share.

    python benchmarks/env_throughput.py               # all 164 HumanEval problems (a couple of minutes)
    python benchmarks/env_throughput.py --problems 20 # a quick look

For each pair of scripted policies it plays one episode per problem (mutants are made on first use of a problem, a
one-off cost reported apart as "cold start"). Sandbox time is measured by timing every ``run_matrix`` call the env
makes (``Sandbox.run_wire``), not read from infos. Prints a markdown table, or JSON rows with ``--json``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

import teamgym
from teamgym.sandbox import Sandbox

PAIRS = (("oracle", "oracle"), ("buggy", "oracle"), ("buggy", "lazy"))


class SandboxTimer:
    """Wraps ``Sandbox.run_wire`` (every batch of jobs the env sends), adding up the seconds spent inside."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.calls = 0
        self._real: Callable[..., Any] = Sandbox.run_wire

    def __enter__(self) -> SandboxTimer:
        real = self._real

        def timed(box: Sandbox, *args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return real(box, *args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start
                self.calls += 1

        Sandbox.run_wire = timed
        return self

    def __exit__(self, *exc: object) -> None:
        Sandbox.run_wire = self._real


def play(env: Any, task_id: str, coder: str, tester: str) -> int:
    """One episode with the named scripted policies; returns the number of agent-turns."""
    base = env.unwrapped
    env.reset(seed=0, options={"task_id": task_id})
    policies = {
        "coder": base.scripted_policy("coder", coder),
        "tester": base.scripted_policy("tester", tester),
    }
    turns = 0
    while env.agents:
        agent = env.agent_selection
        if env.terminations[agent] or env.truncations[agent]:
            env.step(None)
            continue
        env.step(policies[agent](env.observe(agent)))
        turns += 1
    return turns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--problems", type=int, default=164, help="first N HumanEval problems (default: all 164)"
    )
    parser.add_argument("--max-turns", type=int, default=4)
    parser.add_argument("--json", action="store_true", help="print the rows as one JSON list (benchmarks/revisions.py)")
    args = parser.parse_args()

    env = teamgym.make("coder_tester-v0", limit=args.problems, max_turns=args.max_turns)
    task_ids = env.unwrapped.task_ids()
    start = time.perf_counter()
    with SandboxTimer() as cold:
        for task_id in task_ids:
            env.reset(seed=0, options={"task_id": task_id})
    cold_seconds = time.perf_counter() - start

    rows = [{"pair": "cold start", "seconds": cold_seconds, "sandbox_share": cold.seconds / cold_seconds}]
    for coder, tester in PAIRS:
        start = time.perf_counter()
        with SandboxTimer() as timer:
            turns = sum(play(env, task_id, coder, tester) for task_id in task_ids)
        seconds = time.perf_counter() - start
        rows.append(
            {
                "pair": f"{coder} coder, {tester} tester",
                "episodes_s": len(task_ids) / seconds,
                "agent_turns_s": turns / seconds,
                "sandbox_share": timer.seconds / seconds,
                "sandbox_calls": timer.calls,
            }
        )
    if args.json:
        print(json.dumps(rows))
        return
    print(
        f"coder_tester-v0, {len(task_ids)} HumanEval problems, max_turns={args.max_turns}, "
        f"cold start (mutants for every problem): {cold_seconds:.1f} s, {rows[0]['sandbox_share']:.0%} in sandbox\n"
    )
    print("| coder, tester | episodes/s | agent-turns/s | sandbox share | sandbox calls |")
    print("|---|---:|---:|---:|---:|")
    for r in rows[1:]:
        print(
            f"| {r['pair']} | {r['episodes_s']:.1f} | {r['agent_turns_s']:.1f} | {r['sandbox_share']:.0%} | "
            f"{r['sandbox_calls']} |"
        )


if __name__ == "__main__":
    main()
