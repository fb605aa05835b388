"""``teamgym train``: the command line of the trainer (also ``python -m teamgym.train``).

Settings come from, in increasing precedence: the defaults (the embedded main job), the run's saved
``config.json`` when resuming, ``--config FILE`` (JSON), ``--set FIELD=VALUE`` (any field, JSON values), then the
named flags. At the end it prints held-out success before training, after the SFT warm start, and after RL.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from dataclasses import fields
from pathlib import Path
from typing import Any

from teamgym.errors import TeamGymError

__all__ = ["add_arguments", "run", "config_from_args", "main"]

#: Named flags: (flag, config field, type, help).
FLAGS: tuple[tuple[str, str, Any, str], ...] = (
    ("--env", "env_id", str, "env id (default plan_path-v0, the embedded main job)"),
    ("--algo", "algo", str, "advantage estimator by name (default at_grpo; also gigpo, team_gigpo, treerl, spo, "
                            "spo_per_agent, ...: see docs/training.md, Estimators)"),
    ("--rollout", "rollout", str, "auto (the algo's) | tree | trajectory"),
    ("--steps", "steps", int, "RL steps"),
    ("--output-dir", "output_dir", str, "run directory (metrics.jsonl, checkpoints, plot, summary.json)"),
    ("--seed", "seed", int, "seed of the model init, sampling and task draws"),
    ("--tasks-per-step", "tasks_per_step", int, "episodes per RL step"),
    ("--k", "k", int, "candidates per tree node (AT-GRPO: 4)"),
    ("--group-size", "group_size", int, "trajectory rollouts: episodes per task (GiGPO's G)"),
    ("--strategy", "strategy", str, "tree advance: greedy | top_m | adaptive"),
    ("--sft-steps", "sft_steps", int, "warm-start SFT steps on scripted demonstrations (0 = none)"),
    ("--eval-tasks", "eval_tasks", int, "held-out tasks for the before/after evaluation"),
    ("--eval-every", "eval_every", int, "also evaluate every N steps (0 = before/after only)"),
    ("--checkpoint-every", "checkpoint_every", int, "checkpoint every N steps"),
    ("--lr", "lr", float, "RL learning rate"),
    ("--model", "model", str, "'tiny' (built in code) or a local transformers checkpoint dir"),
    ("--device", "device", str, "cpu or cuda"),
    ("--env-workers", "env_workers", int, "threads stepping envs in parallel"),
    ("--rollout-waves", "rollout_waves", int, "waves per rollout (2+: env work overlaps generation)"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the ``train`` options on ``parser``."""
    for flag, name, kind, text in FLAGS:
        parser.add_argument(flag, dest=name, type=kind, default=None, help=text)
    parser.add_argument("--resume", action="store_true", help="continue from the newest valid checkpoint")
    parser.add_argument("--config", dest="config_file", default=None, metavar="FILE",
                        help="JSON file of config fields (see docs/training.md)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="FIELD=VALUE",
                        help="set any config field (VALUE parsed as JSON, else taken as a string); repeatable")
    parser.add_argument("--no-progress", action="store_true", help="no tqdm progress bar")
    parser.add_argument("--no-plot", action="store_true", help="no learning-curve PNG")
    parser.add_argument("--tensorboard", action="store_true", help="also log to TensorBoard")
    parser.add_argument("--wandb", action="store_true", help="also log to Weights & Biases")


def config_from_args(args: argparse.Namespace) -> Any:
    """The :class:`TrainConfig` the arguments describe (see the module docstring for precedence)."""
    from teamgym.train.config import TrainConfig

    values: dict[str, Any] = {}
    output_dir = args.output_dir or TrainConfig.output_dir
    saved = Path(output_dir) / "config.json"
    if args.resume and saved.exists():
        values.update(json.loads(saved.read_text(encoding="utf-8")))
    if args.config_file:
        values.update(TrainConfig.from_file(args.config_file).to_dict())
    known = {f.name for f in fields(TrainConfig)}
    for item in args.overrides:
        name, sep, raw = item.partition("=")
        if not sep or name not in known:
            from teamgym.errors import InvalidArgumentError, closest_names

            raise InvalidArgumentError(
                f"--set {item!r}: expected FIELD=VALUE with a config field name; closest: "
                f"{closest_names(name, known) or sorted(known)}"
            )
        try:
            values[name] = json.loads(raw)
        except json.JSONDecodeError:
            values[name] = raw
    for _, name, _, _ in FLAGS:
        if getattr(args, name) is not None:
            values[name] = getattr(args, name)
    if args.no_progress:
        values["progress_bar"] = False
    if args.no_plot:
        values["plot"] = False
    if args.tensorboard:
        values["tensorboard"] = True
    if args.wandb:
        values["wandb"] = True
    return TrainConfig.from_dict(values)


def run(args: argparse.Namespace) -> int:
    """Run the job the arguments describe; print the before/after summary. Returns the exit status."""
    from teamgym.train.trainer import train

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        config = config_from_args(args)
        summary = train(config, resume=args.resume)
    except TeamGymError as err:
        print(f"teamgym train: error: {err}", file=sys.stderr)
        return 2
    print(_report(summary))
    return 0


def _report(summary: dict[str, Any]) -> str:
    def pct(key: str) -> str:
        greedy, sampled = summary.get(f"heldout_success_{key}"), summary.get(f"heldout_sampled_success_{key}")
        if greedy is None:
            return "n/a"
        return f"{100 * greedy:5.1f}% greedy, {100 * sampled:5.1f}% sampled"

    stages = [("before training:", "before")]
    if summary.get("heldout_success_after_sft") is not None:
        stages.append((f"after SFT warm start ({summary['sft_steps']} steps):", "after_sft"))
    stages.append((f"after {summary['steps']} {summary['algo']} steps:", "after"))
    width = max(len(label) for label, _ in stages)
    lines = [f"held-out success on {summary['heldout_tasks']} {summary['env_id']} tasks (one sample per node):"]
    lines += [f"  {label.ljust(width)} {pct(key)}" for label, key in stages]
    lines.append(f"wall time: {summary['wall_seconds']:.0f} s")
    if summary.get("plot"):
        lines.append(f"learning curves: {summary['plot']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m teamgym.train", description="Train a team of LLM agents.")
    add_arguments(parser)
    return run(parser.parse_args(argv))
