"""Input validation shared by the estimators: cheap checks whose errors say the bad value and the fix."""

from __future__ import annotations

import math

import torch

from teamgym.errors import InvalidArgumentError

__all__ = ["MAX_MAGNITUDE", "check_values", "check_ids", "check_same_length", "check_positive", "check_output"]

#: The largest magnitude an estimator input may have: group statistics square centred values in float64, and
#: ``(2 * 1e150) ** 2`` summed over a billion rows stays finite, while ``1e308`` overflows a mean of two values.
MAX_MAGNITUDE = 1e150


def check_values(name: str, values: torch.Tensor) -> torch.Tensor:
    """A 1-D finite floating tensor with ``|x| <= MAX_MAGNITUDE`` (integers and bools are promoted to float32)."""
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
    # one pass, no temporary: the extremes are NaN (aminmax propagates it) or beyond the bound iff some value is; the
    # elementwise search only on failure
    low, high = torch.stack(torch.aminmax(values)).tolist() if values.numel() else (0.0, 0.0)
    if not (-MAX_MAGNITUDE <= low and high <= MAX_MAGNITUDE):
        if not bool(torch.isfinite(values).all()):
            bad = int((~torch.isfinite(values)).nonzero()[0])
            raise InvalidArgumentError(
                f"{name} must be finite, got {values[bad].item()} at row {bad}: replace NaN/inf rewards before "
                "computing advantages"
            )
        bad = int((values.abs() > MAX_MAGNITUDE).nonzero()[0])
        raise InvalidArgumentError(
            f"{name} holds {values[bad].item():g} at row {bad}, beyond +-{MAX_MAGNITUDE:g}, where float64 group "
            "statistics overflow: rescale the values (e.g. divide them by their largest magnitude)"
        )
    return values


def check_output(name: str, values: torch.Tensor) -> torch.Tensor:
    """``values`` (an estimator's result) unchanged if finite; an error naming the overflow otherwise.

    Finite inputs within :data:`MAX_MAGNITUDE` give finite float64 statistics, but a result cast back to a narrow
    dtype (float32 rewards near its largest value) can overflow it.
    """
    # one reduction, no temporary: the extremes are NaN or inf iff some value is (aminmax propagates NaN)
    if values.numel() and not all(math.isfinite(v) for v in torch.stack(torch.aminmax(values)).tolist()):
        raise InvalidArgumentError(
            f"{name} overflow {values.dtype} (finite inputs near the largest {values.dtype} value): pass the inputs as "
            "float64 or rescale them"
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
