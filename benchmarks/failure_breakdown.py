"""Where a planning team's held-out greedy episodes succeed and fail: the tool's first plan and the planner's answer.

    python benchmarks/failure_breakdown.py RUN_DIR                 # its newest checkpoint
    python benchmarks/failure_breakdown.py RUN_DIR --step 0        # its warm start (a --steps 0 run, or a kept step 0)
    python benchmarks/failure_breakdown.py A B --json              # several runs, one JSON row each

For a run of a planning env (``plan_path``, ``sokoban``, ``sudoku``: a ``tool`` then a ``planner`` each turn), this
replays the run's held-out evaluation with greedy decoding (its config, its held-out tasks, the checkpoint's
weights; the numbers match the run's own greedy evaluation) and counts, per episode:

- whether the tool's first program printed a plan that solves the task (the env's ``plan`` term is 1);
- the length of that plan (moves or placements; -1 when it printed none that reads);
- whether the planner's first answer is the tool's plan (``copy``) or another (``own``);
- the outcome and the turns used.

``rescued`` counts the episodes the team solved although the tool's first plan did not: the planner's own answer,
or a later turn. ``repeated`` counts the failed episodes in which the tool got the same prompt twice: a plan whose
moves were all invalid left the board as it was, and the compact prompts show the board only, so greedy decoding
answered the same plan again. ``same_answer`` counts the failed episodes in which the tool wrote the same completion
at two turns: under prompts that carry the turn (``compact_feedback``) no prompt repeats, and this says whether the
tool still answered as before.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
try:
    import teamgym  # noqa: F401
except ModuleNotFoundError:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(ROOT))


def _plan(text: str, parse: Callable[[str], list[Any] | None]) -> list[Any] | None:
    """The plan a completion states, read by the env's own parser (``parse``): a tool's program's printed output
    (answered without running it when it only prints literals), or a planner's answer. ``None`` when none reads."""
    from teamgym.core import select_code_block
    from teamgym.sandbox._literal import answer
    from teamgym.sandbox.result import Job

    block = select_code_block(text)
    if block is not None:
        result = answer(Job(code=block.code))
        if result is None or result.status != "ok":
            return None
        text = result.stdout
    return parse(text)


def breakdown(run_dir: Path, step: int | None = None) -> dict[str, Any]:
    """The counts of one run's checkpoint (``step``; default the newest)."""
    import torch

    from teamgym.rollout import TreeSampling
    from teamgym.rollout.engine import SamplingParams
    from teamgym.train.checkpoint import load_checkpoint, load_latest_checkpoint
    from teamgym.train.config import TrainConfig
    from teamgym.train.trainer import Trainer

    saved = json.loads((run_dir / "config.json").read_text())
    if step is None:
        latest = load_latest_checkpoint(run_dir)
        if latest is None:
            raise SystemExit(f"{run_dir} has no checkpoint")
        step, state = latest
    else:
        state = load_checkpoint(run_dir, step)
    with tempfile.TemporaryDirectory(prefix="teamgym-breakdown-") as tmp:
        config = TrainConfig.from_dict({**saved, "output_dir": str(Path(tmp) / "run")})
        trainer = Trainer(config)
        try:
            if set(trainer.roles) != {"tool", "planner"}:
                raise SystemExit(f"{config.env_id} is not a planning env (roles {trainer.roles})")
            trainer._load_policies(state, str(run_dir), "")
            for policy in trainer.policies.values():
                policy.rng.manual_seed(config.seed + 1)  # as the run's own evaluation seeds it
            with torch.no_grad():
                result = trainer.engine.rollout(
                    trainer.tasks.heldout_ids, episode_prefix="eval", tree=TreeSampling(k=1),
                    sampling=SamplingParams(temperature=0.0, max_tokens=trainer.max_tokens))
            tokenizer = {role: policy.tokenizer for role, policy in trainer.policies.items()}
            env = trainer._env_fn()
            env.reset(seed=config.seed)  # a task, for the parser's bounds (they depend on the env's options only)
            parse = env.unwrapped._parse_plan
        finally:
            trainer.close()
    batch = result.batch
    rows: dict[str, list[int]] = collections.defaultdict(list)
    for i, episode_id in enumerate(batch.episode_id):
        rows[episode_id].append(i)
    counts: collections.Counter[str] = collections.Counter()
    lengths: collections.Counter[int] = collections.Counter()
    for episode in result.episodes:
        first = {batch.agent[i]: i for i in reversed(rows[episode["episode_id"]]) if batch.turn[i] == 0}
        tool_text = tokenizer["tool"].decode(batch.completion_ids[first["tool"]], skip_special_tokens=True)
        tool_plan = _plan(tool_text, parse)
        planner_plan = (_plan(tokenizer["planner"].decode(batch.completion_ids[first["planner"]],
                                                          skip_special_tokens=True), parse)
                        if "planner" in first else None)
        tool_right = batch.reward_terms[first["tool"]].get("plan", 0.0) >= 1.0
        success = bool(episode.get("success"))
        lengths[-1 if tool_plan is None else len(tool_plan)] += 1
        counts["episodes"] += 1
        counts["success"] += success
        counts["tool_right"] += tool_right
        counts["planner_copies"] += planner_plan is not None and planner_plan == tool_plan
        counts["rescued"] += success and not tool_right
        counts["lost"] += tool_right and not success
        tool_rows = [i for i in rows[episode["episode_id"]] if batch.agent[i] == "tool"]
        counts["failed"] += not success
        for name, ids in (("repeated", batch.prompt_ids), ("same_answer", batch.completion_ids)):
            counts[name] += not success and len({tuple(ids[i]) for i in tool_rows}) < len(tool_rows)
        one_turn = all(batch.turn[i] == 0 for i in rows[episode["episode_id"]])
        counts["rescued_by_own_first_answer"] += success and not tool_right and planner_plan != tool_plan and one_turn
    env.close()
    return {"run": str(run_dir), "step": step, "env_id": config.env_id, **dict(counts),
            "tool_plan_lengths": {str(k): lengths[k] for k in sorted(lengths)}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run folders (with config.json and checkpoints/)")
    parser.add_argument("--step", type=int, default=None, help="the checkpoint's step (default: the newest)")
    parser.add_argument("--json", action="store_true", help="one JSON object per run")
    args = parser.parse_args(argv)
    for run in args.runs:
        row = breakdown(run, args.step)
        if args.json:
            print(json.dumps(row))
            continue
        n = row["episodes"]
        print(f"{row['run']} (step {row['step']}, {row['env_id']}, {n} held-out tasks, greedy)")
        print(f"  solved: {row['success']}; the tool's first plan solves: {row['tool_right']}; "
              f"rescued (solved although it did not): {row['rescued']}, "
              f"{row['rescued_by_own_first_answer']} by the planner's own first answer; "
              f"lost (it did, the team did not): {row['lost']}")
        print(f"  the planner's first answer copies the tool's plan: {row['planner_copies']} of {n}")
        print(f"  failed: {row['failed']}; the tool got the same prompt twice (greedy, the same plan): "
              f"{row['repeated']}; the tool wrote the same answer at two turns: {row['same_answer']}")
        print("  the tool's first plan, moves: " + ", ".join(f"{k}: {v}" for k, v in row["tool_plan_lengths"].items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
