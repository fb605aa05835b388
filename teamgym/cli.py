"""The ``teamgym`` command line: ``list``, ``play``, ``train``, ``inspect`` and the contributor's tools.

::

    teamgym --version
    teamgym list                                     # ids, agents, one-line descriptions
    teamgym play coder_tester-v0                     # you type every agent's completion
    teamgym play coder_tester-v0 --agent tester=scripted --seed 3
    teamgym play plan_path-v0 --agent all=scripted   # watch the scripted team play
    teamgym train --env plan_path-v0 --algo at_grpo --steps 20 --output-dir runs/demo
    teamgym inspect runs/demo                        # an HTML report of the saved rollouts (docs/inspect.md)
    teamgym new-env my_game --package ../my-game     # a new env as a plugin package (CONTRIBUTING.md)
    teamgym check my_game-v0                         # every conformance check, each with its fix
    teamgym catalogue --write                        # regenerate the env pages, docs/envs/
    teamgym versions                                 # every env version behaves as recorded

In ``play``, end a completion with a line holding a single ``.`` (or end of input).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TextIO

from teamgym.core.env import TurnBasedTextEnv
from teamgym.core.outcome import Policy
from teamgym.errors import InvalidArgumentError, TeamGymError

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``teamgym`` console script; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["train"]:  # its own parser, built from the config: only `train` pays for importing the trainer
        return _train(argv[1:])
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except TeamGymError as err:
        print(f"teamgym: error: {err}", file=sys.stderr)
        return 2


def _parser() -> argparse.ArgumentParser:
    from teamgym import __version__

    parser = argparse.ArgumentParser(prog="teamgym", description="Environments and training for teams of LLM agents.")
    parser.add_argument("--version", action="version", version=f"teamgym {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    listing = commands.add_parser("list", help="list the registered envs")
    listing.set_defaults(run=_list)

    play = commands.add_parser("play", help="play an env by hand, optionally with scripted partners")
    play.add_argument("env_id", help="a registered env id, e.g. coder_tester-v0")
    play.add_argument("--agent", action="append", default=[], metavar="ROLE=scripted[:NAME]",
                      help="let a scripted policy play ROLE ('all' for every role); repeatable")
    play.add_argument("--seed", type=int, default=0, help="episode seed (default 0)")
    play.add_argument("--task-id", default=None, help="play this task (reset option task_id)")
    play.set_defaults(run=_play)

    commands.add_parser("train", add_help=False,
                        help="train a team with an advantage estimator (`teamgym train --help`; docs/training.md)")

    inspect = commands.add_parser("inspect", help="write an HTML report of a run's rollouts (see docs/inspect.md)")
    from teamgym.report import write as report_cli

    report_cli.add_arguments(inspect)
    inspect.set_defaults(run=report_cli.run)
    _add_contributor_commands(commands)
    return parser


def _add_contributor_commands(commands: argparse._SubParsersAction) -> None:
    """``check``, ``new-env``, ``catalogue`` and ``versions``: the env contributor's tools (CONTRIBUTING.md)."""
    from teamgym.contrib import checks

    check = commands.add_parser("check", help="run every check_env check on an env and report each (exit 0/1)")
    checks.add_arguments(check)
    check.set_defaults(run=checks.run)

    from teamgym.contrib import scaffold

    new_env = commands.add_parser("new-env", help="scaffold a new env (in this checkout, or --package DIR: a plugin)")
    scaffold.add_arguments(new_env)
    new_env.set_defaults(run=scaffold.run)

    from teamgym.contrib import catalogue

    pages = commands.add_parser("catalogue", help="check (or --write) the env catalogue's pages, docs/envs/")
    catalogue.add_arguments(pages)
    pages.set_defaults(run=catalogue.run)

    from teamgym.contrib import versions

    record = commands.add_parser("versions", help="check env behaviour against the recorded fingerprints (exit 0/1)")
    versions.add_arguments(record)
    record.set_defaults(run=versions.run)


def _train(argv: list[str]) -> int:
    try:
        from teamgym.train.cli import main as train_main
    except ImportError as err:
        print(f"teamgym: 'train' is not available in this installation ({err})", file=sys.stderr)
        return 2
    return train_main(argv, prog="teamgym train")


def _list(args: argparse.Namespace) -> int:
    from teamgym.registry import pprint_registry

    pprint_registry()
    return 0


def _play(args: argparse.Namespace, stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    from teamgym.registry import make

    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    env = make(args.env_id, render_mode="ansi")
    base = env.unwrapped
    env.reset(seed=args.seed, options=None if args.task_id is None else {"task_id": _task_id(base, args.task_id)})
    policies = _scripted(base, args.agent)
    print(f"# playing {args.env_id}, seed {args.seed}", file=stdout)
    shown = 0
    for agent in env.agent_iter():
        observation, _, terminated, truncated, info = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        if agent in policies:
            action = policies[agent](observation)
        else:
            print(f"\n##### {agent} (turn {observation['turn']}) sees:\n{observation['prompt']}", file=stdout)
            print(f"##### type {agent}'s completion, end with a line holding a single '.':", file=stdout)
            action = _read_completion(stdin)
        env.step(action)
        transcript = env.render() or ""
        new = transcript.splitlines()[shown:]
        shown += len(new)
        print("\n".join(new), file=stdout)
    final = env.render() or ""
    tail = final.splitlines()[shown:]
    if tail:
        print("\n".join(tail), file=stdout)
    env.close()
    return 0


def _task_id(env: TurnBasedTextEnv, raw: str) -> object:
    """The task id a user typed: an int for procedural envs; for datasets, the id as typed (or as an int if it is)."""
    known = env.task_ids()
    if known is None:
        try:
            return int(raw)
        except ValueError:
            raise InvalidArgumentError(f"--task-id {raw!r}: this env's tasks are numbered, pass an integer") from None
    if raw not in set(known) and raw.lstrip("-").isdigit() and int(raw) in set(known):
        return int(raw)
    return raw


def _scripted(env: TurnBasedTextEnv, specs: Sequence[str]) -> dict[str, Policy]:
    available = env.scripted_policies() if isinstance(env, TurnBasedTextEnv) else {}
    policies: dict[str, Policy] = {}
    for spec in specs:
        role, sep, choice = spec.partition("=")
        kind, _, name = choice.partition(":")
        if not sep or kind != "scripted":
            raise InvalidArgumentError(f"--agent {spec!r}: expected ROLE=scripted or ROLE=scripted:NAME")
        roles = list(available) if role == "all" else [role]
        for r in roles:
            if r not in available:
                raise InvalidArgumentError(
                    f"--agent {spec!r}: no scripted policy for role {r!r}; roles with one: {sorted(available)}"
                )
            policies[r] = env.scripted_policy(r, name or None)
    return policies


def _read_completion(stdin: TextIO) -> str:
    lines = []
    for line in stdin:
        if line.rstrip("\r\n") == ".":
            break
        lines.append(line)
    return "".join(lines).rstrip("\n")


if __name__ == "__main__":
    raise SystemExit(main())
