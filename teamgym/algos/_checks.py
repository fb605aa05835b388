"""Input validation shared by the estimators: cheap checks whose errors say the bad value and the fix."""

from __future__ import annotations

import math

import torch

from teamgym.errors import InvalidArgumentError

__all__ = ["check_values", "check_ids", "check_same_length", "check_positive"]


def check_values(name: str, values: torch.Tensor) -> torch.Tensor:
    """A 1-D finite floating tensor (integers and bools are promoted to float32)."""
    if not isinstance(values, torch.Tensor):
        raise InvalidArgumentError(
            f"{name} must be a torch.Tensor, got {type(values).__name__}: wrap it with torch.as_tensor(...)"
        )
    if values.dim() != 1:
        raise InvalidArgumentError(
            f"{name} must be 1-D (one value per agent-turn row), got shape {tuple(values.shape)}: flatten it"
        )
    if not values.is_floating_point():
        values = values.to(torch.float32)
    # one float64 sum is finite iff every value is (NaN/inf propagate); the elementwise check only on failure
    if not math.isfinite(float(values.sum(dtype=torch.float64))) and not bool(torch.isfinite(values).all()):
        bad = int((~torch.isfinite(values)).nonzero()[0])
        raise InvalidArgumentError(
            f"{name} must be finite, got {values[bad].item()} at row {bad}: replace NaN/inf rewards before "
            "computing advantages"
        )
    return values


def check_ids(name: str, ids: torch.Tensor) -> torch.Tensor:
    """A 1-D integer id tensor (any values), returned as int64."""
    if not isinstance(ids, torch.Tensor):
        raise InvalidArgumentError(
            f"{name} must be an int64 torch.Tensor, got {type(ids).__name__}: build ids with "
            "teamgym.algos.group_ids(...)"
        )
    if ids.dim() != 1:
        raise InvalidArgumentError(f"{name} must be 1-D, got shape {tuple(ids.shape)}: flatten it")
    if ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool:
        raise InvalidArgumentError(
            f"{name} must hold integers, got dtype {ids.dtype}: build ids with teamgym.algos.group_ids(...)"
        )
    return ids.to(torch.int64)


def check_same_length(**columns: torch.Tensor) -> int:
    """All columns have the same length and device; returns the length."""
    lengths = {name: int(col.shape[0]) for name, col in columns.items()}
    devices = {str(col.device) for col in columns.values() if isinstance(col, torch.Tensor)}
    if len(devices) > 1:
        raise InvalidArgumentError(
            f"columns are on different devices {sorted(devices)}: move them to one device with .to(device)"
        )
    if len(set(lengths.values())) > 1:
        listed = ", ".join(f"{k}={v}" for k, v in lengths.items())
        raise InvalidArgumentError(
            f"columns must have one row per agent-turn, got lengths {listed}: align them"
        )
    return next(iter(lengths.values()), 0)


def check_positive(name: str, value: float, *, allow_zero: bool = False) -> float:
    """A finite number > 0 (or >= 0)."""
    value = float(value)
    ok = value >= 0 if allow_zero else value > 0
    if not ok or value != value or value == float("inf"):
        bound = ">= 0" if allow_zero else "> 0"
        raise InvalidArgumentError(f"{name} must be a finite number {bound}, got {value}")
    return value
