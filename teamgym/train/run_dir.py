"""A run's folder: what tells a started or finished run apart, and the checks made before a run starts.

Layout (``teamgym train --output-dir D``): ``config.json``, ``metrics.jsonl``, ``checkpoints/step_N/`` (see
:mod:`teamgym.train.checkpoint`), ``summary.json`` once the run has finished, ``learning_curves.png``. This module
imports no torch: ``teamgym train`` refuses a folder it must not write into before anything heavy is imported, and
before it creates any folder.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from teamgym.errors import InvalidArgumentError

__all__ = ["MANIFEST", "STATE_FILE", "SUMMARY_FILE", "check_run_dir", "checkpoint_path", "checkpoints_dir",
           "finished_summary", "list_checkpoints"]

#: Written by a run when it has finished (held-out success before and after, wall time...).
SUMMARY_FILE = "summary.json"
#: A checkpoint's saved state, in its folder (:func:`checkpoint_path`), beside its manifest.
STATE_FILE = "state.pt"
#: A checkpoint's manifest, in its folder: the step, and the SHA-256 and size of every file (see
#: :mod:`teamgym.train.checkpoint`); a checkpoint without one is unfinished or corrupt.
MANIFEST = "manifest.json"


def checkpoints_dir(output_dir: str | Path) -> Path:
    """The folder of ``output_dir``'s checkpoints (each one a folder of its own, :func:`checkpoint_path`)."""
    return Path(output_dir) / "checkpoints"


def checkpoint_path(output_dir: str | Path, step: int) -> Path:
    """The folder of ``output_dir``'s checkpoint of ``step`` (steps completed), finished or not yet written."""
    return checkpoints_dir(output_dir) / f"step_{step:08d}"


def list_checkpoints(output_dir: str | Path) -> list[Path]:
    """Finished checkpoint dirs under ``output_dir``, oldest first (temp dirs of interrupted writes excluded)."""
    root = checkpoints_dir(output_dir)
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and p.name.startswith("step_"))


def check_run_dir(output_dir: str | Path, *, resume: bool) -> None:
    """Refuse to start a new run in ``output_dir`` when it holds another run's checkpoints (unless resuming it).

    Raises:
        InvalidArgumentError: naming the folder and both ways out (``--resume``, another ``--output-dir``).
    """
    path = Path(output_dir)
    if path.exists() and not path.is_dir():
        raise InvalidArgumentError(f"output_dir={str(path)!r} is a file: choose a folder for --output-dir")
    if not resume and list_checkpoints(path):
        raise InvalidArgumentError(
            f"output_dir={str(path)!r} already holds checkpoints of a run: pass --resume to continue it, or choose a "
            "new --output-dir"
        )


def finished_summary(output_dir: str | Path, steps: int, completion_budget: int = 0) -> dict[str, Any] | None:
    """The saved summary of the run in ``output_dir`` when it has finished ``steps`` RL steps or more, or spent
    ``completion_budget`` completions (when > 0), else ``None``.

    A run resumed with more ``steps`` than it finished with (or a larger budget than it spent) is not finished: it
    trains on.
    """
    try:
        summary = json.loads((Path(output_dir) / SUMMARY_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(summary, dict) or not isinstance(summary.get("steps"), int):
        return None
    used = summary.get("completions_used")
    spent = completion_budget > 0 and isinstance(used, int) and used >= completion_budget
    return summary if summary["steps"] >= steps or spent else None
