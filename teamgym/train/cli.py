"""``teamgym train``: the command line of the trainer (also ``python -m teamgym.train``).

The flags are generated from :class:`~teamgym.train.config.TrainConfig`'s documented fields: one per field path, its
``.`` and ``_`` written ``-`` (``--steps``, ``--tree-k``, ``--ppo-lr``, ``--vllm-engines``), its help the field's
documentation. The flat names of earlier versions work as aliases (``--k``, ``--strategy``, ``--lr``,
``--temperature``, ``--generator``...; :data:`~teamgym.train.config.LEGACY_NAMES`), as do ``--env`` for ``--env-id``
and ``--no-progress`` for ``--no-progress-bar``. Booleans take ``--x`` / ``--no-x``; dicts, tuples and fields of
several types take JSON (a value that is not JSON is taken as a string).

Settings come from, in increasing precedence: the defaults (the embedded main job), the run's saved ``config.json``
when resuming, ``--config FILE`` (JSON), ``--set PATH=VALUE`` (any field path or legacy name, JSON values), then the
flags. At the end it prints held-out success before training, after the SFT warm start, and after RL.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

from teamgym.errors import InvalidArgumentError, TeamGymError
from teamgym.train.config import (
    LEGACY_NAMES,
    SECTIONS,
    TrainConfig,
    field_docs,
    field_paths,
    normalize_paths,
    read_config_file,
    saved_config_values,
)
from teamgym.train.kernels import set_kernel_env
from teamgym.train.run_dir import check_run_dir

__all__ = ["add_arguments", "config_from_args", "flag_of", "main", "run"]

#: Flags kept from before the flags were generated, beyond the legacy config names: field path -> alias names.
FLAG_ALIASES = {"env_id": ("env",), "progress_bar": ("progress",)}


def flag_of(name: str) -> str:
    """The flag of a field path or legacy name: ``tree.k`` -> ``--tree-k``."""
    return "--" + name.replace(".", "-").replace("_", "-")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the ``train`` options on ``parser``: one flag per config field (see the module docstring)."""
    docs, types = field_docs(), _field_types()
    aliases: dict[str, list[str]] = {}
    for legacy, path in [*LEGACY_NAMES.items(), *((a, p) for p, names in FLAG_ALIASES.items() for a in names)]:
        aliases.setdefault(path, []).append(legacy)
    for path, item in field_paths().items():
        flags = list(dict.fromkeys([flag_of(path), *(flag_of(name) for name in aliases.get(path, ()))]))
        default = item.default_factory() if callable(item.default_factory) else item.default
        text = f"{docs[path]} [default: {json.dumps(default, default=str)}]".replace("%", "%%")
        kind = types[path]
        if kind is bool:
            parser.add_argument(*flags, dest=path, action=argparse.BooleanOptionalAction, default=argparse.SUPPRESS,
                                help=text)
        else:  # not given: no attribute (None is a value some fields take)
            parser.add_argument(*flags, dest=path, type=kind, default=argparse.SUPPRESS,
                                metavar=path.split(".")[-1].upper(), help=text)
    parser.add_argument("--resume", action="store_true", help="continue from the newest valid checkpoint")
    parser.add_argument("--config", dest="config_file", default=None, metavar="FILE",
                        help="JSON file of config fields (see docs/training.md)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE",
                        help="set any config field by path (tree.k) or earlier flat name (k); VALUE parsed as JSON, "
                             "else taken as a string; repeatable")


def _field_types() -> dict[str, Callable[[str], Any]]:
    """Field path -> how its flag parses a value: ``int``, ``float``, ``str``, ``bool`` (a switch) or JSON."""
    hints = {"": typing.get_type_hints(TrainConfig)}
    hints.update({name: typing.get_type_hints(section) for name, section in SECTIONS.items()})
    out: dict[str, Callable[[str], Any]] = {}
    for path in field_paths():
        section, _, name = path.rpartition(".")
        hint = hints[section][name]
        out[path] = hint if hint in (int, float, str, bool) else _json_value
    return out


def _json_value(raw: str) -> Any:
    """``raw`` as JSON, or as the string itself when it is not JSON."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    """The :class:`TrainConfig` the arguments describe (see the module docstring for precedence)."""
    return TrainConfig.from_dict(_settings(args))


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    """``{field path: value}`` from the saved config (``--resume``), ``--config``, ``--set`` and the flags."""
    paths = field_paths()
    values: dict[str, Any] = {}
    saved = Path(vars(args).get("output_dir", TrainConfig.output_dir)) / "config.json"
    if args.resume and saved.exists():
        values.update(saved_config_values(json.loads(saved.read_text(encoding="utf-8"))))
    if args.config_file:
        # its own keys only, so that the fields it leaves unset still take the algo's recipe, then the defaults (their
        # values are checked with the rest of the config)
        values.update(normalize_paths(read_config_file(args.config_file)))
    overrides: dict[str, Any] = {}
    for item in args.overrides:
        name, sep, raw = item.partition("=")
        if not sep:
            raise InvalidArgumentError(f"--set {item!r}: expected PATH=VALUE with a config field path, e.g. tree.k=2")
        overrides[name] = _json_value(raw)
    values.update(normalize_paths(overrides))  # together: a legacy alpha_mixer=static reads the alpha beside it
    values.update({path: getattr(args, path) for path in paths if hasattr(args, path)})
    return values


def run(args: argparse.Namespace) -> int:
    """Run the job the arguments describe; print the before/after summary. Returns the exit status.

    Everything a user can get wrong is checked before the trainer (torch, transformers) is imported and before any
    folder is created: the settings, then the run folder, then the config (its estimator check imports torch).
    """
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        values = _settings(args)
        # Before anything runs a torch op (the config's estimator check does): the same floats on every host. Only
        # the environment here: torch is imported after the checks, and the trainer confirms the kernels it runs.
        set_kernel_env(values.get("cpu_kernels", TrainConfig.cpu_kernels))
        output_dir = values.get("output_dir", TrainConfig.output_dir)
        if isinstance(output_dir, str):  # anything else: the config names the bad value
            check_run_dir(output_dir, resume=args.resume)
        config = TrainConfig.from_dict(values)
        from teamgym.train.trainer import train

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
    folder = summary.get("output_dir")
    if folder:
        lines.append(f"run folder: {folder} (metrics.jsonl, checkpoints/, summary.json; `teamgym inspect {folder}`)")
    return "\n".join(lines)


def main(argv: list[str] | None = None, *, prog: str = "python -m teamgym.train") -> int:
    """Parse ``argv`` (default: the process's arguments) and run; returns the exit status."""
    parser = argparse.ArgumentParser(prog=prog, description="Train a team of LLM agents (docs/training.md).")
    add_arguments(parser)
    return run(parser.parse_args(argv))
