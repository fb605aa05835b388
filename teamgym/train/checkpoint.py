"""Atomic, verified checkpoints: write to a temp dir, fsync, ``os.replace``; keep the last N; load the newest valid.

Layout: ``<output_dir>/checkpoints/step_00000010/{state.pt, manifest.json}``. The manifest records the step and the
SHA-256 and size of every file; a checkpoint whose manifest is missing or whose files do not match it (a ``kill -9``
mid-write leaves only a ``.tmp-*`` dir, which the next run removes as it starts, but a disk error or a manual edit can
corrupt a finished one) is skipped with a warning naming it, and the previous one is used.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any

import torch

from teamgym.errors import CheckpointError
from teamgym.train.run_dir import MANIFEST, STATE_FILE, checkpoint_path, checkpoints_dir, list_checkpoints

__all__ = ["MANIFEST", "STATE_FILE", "save_checkpoint", "load_checkpoint", "load_latest_checkpoint", "list_checkpoints",
           "checkpoint_path", "remove_stale_writes", "verify_checkpoint"]

logger = logging.getLogger(__name__)

#: An unfinished write's folder name starts with this, then the checkpoint's name (``.tmp-step_00000010-PID``).
TMP_PREFIX = ".tmp-"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def save_checkpoint(root: str | Path, step: int, state: dict[str, Any], *, keep: int = 2) -> Path:
    """Write ``state`` as the checkpoint of ``step`` (steps completed) atomically; prune to the newest ``keep``."""
    final = checkpoint_path(root, step)
    root = final.parent
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / f"{TMP_PREFIX}{final.name}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    state_path = tmp / STATE_FILE
    with open(state_path, "wb") as fh:
        torch.save(state, fh)
        fh.flush()
        os.fsync(fh.fileno())
    manifest = {"format": 1, "step": step,
                "files": {STATE_FILE: {"sha256": _sha256(state_path), "bytes": state_path.stat().st_size}}}
    with open(tmp / MANIFEST, "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, indent=2)
        fh.flush()
        os.fsync(fh.fileno())
    _fsync_dir(tmp)
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)
    _fsync_dir(root)
    for old in list_checkpoints(root.parent)[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def remove_stale_writes(output_dir: str | Path) -> list[Path]:
    """Delete the ``.tmp-*`` dirs that interrupted writes left in ``output_dir/checkpoints``; returns them.

    Called as a run starts or resumes: a run owns its output dir, so no other write can be in flight there.
    """
    root = checkpoints_dir(output_dir)
    stale = sorted(p for p in root.glob(f"{TMP_PREFIX}*") if p.is_dir()) if root.is_dir() else []
    for path in stale:
        logger.warning("removing %s, left by an interrupted checkpoint write", path)
        shutil.rmtree(path, ignore_errors=True)
    return stale


def verify_checkpoint(path: str | Path) -> str | None:
    """``None`` when ``path`` matches its manifest, else the reason it does not."""
    path = Path(path)
    try:
        manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
        files = manifest["files"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        return f"manifest unreadable ({err.__class__.__name__}: {err})"
    for name, meta in files.items():
        file = path / name
        if not file.is_file():
            return f"{name} is missing"
        if file.stat().st_size != meta["bytes"]:
            return f"{name} has {file.stat().st_size} bytes, the manifest says {meta['bytes']} (truncated?)"
        if _sha256(file) != meta["sha256"]:
            return f"{name} does not match its SHA-256 checksum (corrupt)"
    return None


def load_checkpoint(output_dir: str | Path, step: int) -> dict[str, Any]:
    """The state of ``output_dir``'s checkpoint of ``step``, verified against its manifest.

    Raises:
        CheckpointError: there is no such checkpoint (naming the ones there are), or it is invalid (naming why).
    """
    path = checkpoint_path(output_dir, step)
    if not path.is_dir():
        there = ", ".join(p.name for p in list_checkpoints(output_dir)) or "none"
        raise CheckpointError(f"{output_dir} has no checkpoint of step {step} ({path}); its checkpoints: {there}")
    state, reason = _read(path)
    if state is None:
        raise CheckpointError(f"checkpoint {path} is invalid: {reason}")
    return state


def _read(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """``(state, None)`` of a checkpoint dir that matches its manifest and unpickles, else ``(None, its defect)``."""
    reason = verify_checkpoint(path)
    if reason is not None:
        return None, reason
    try:
        return torch.load(path / STATE_FILE, map_location="cpu", weights_only=False), None
    except Exception as err:  # a file that passes the checksum but fails to unpickle
        return None, f"{STATE_FILE} could not be loaded ({err.__class__.__name__}: {err})"


def load_latest_checkpoint(output_dir: str | Path) -> tuple[int, dict[str, Any]] | None:
    """``(step, state)`` of the newest valid checkpoint, falling back over invalid ones; ``None`` if there is none.

    Raises:
        CheckpointError: checkpoints exist but none is valid (each is named with its defect).
    """
    candidates = list_checkpoints(output_dir)
    if not candidates:
        return None
    problems = []
    for path in reversed(candidates):
        state, reason = _read(path)
        if state is not None:
            if problems:
                logger.warning("resuming from %s instead: %s", path, "; ".join(problems))
            return int(state["step"]), state
        problems.append(f"checkpoint {path} is invalid: {reason}")
        logger.warning("checkpoint %s is invalid (%s); falling back to the previous one", path, reason)
    raise CheckpointError(
        "no valid checkpoint to resume from: " + "; ".join(problems)
        + ". Delete the bad checkpoint dirs to start from scratch, or restore them from a backup."
    )
