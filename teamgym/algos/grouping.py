"""Group ids from key columns, and vectorised per-group statistics (mean, Bessel std, size).

Every group-relative estimator reduces to: turn key columns into dense int64 ids, then compute a statistic per
group with ``index_add_`` and gather it back per row. Both steps are O(N) tensor operations except one sort when
ids are sparse (``torch.unique``); strings are factorised with a dict (about 0.2 s per million on one core).

>>> import torch
>>> ids = group_ids(["t1", "t1", "t2"], torch.tensor([0, 0, 0]))
>>> ids.tolist()
[0, 0, 1]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from teamgym.algos._checks import check_ids
from teamgym.errors import InvalidArgumentError

__all__ = [
    "factorize",
    "group_ids",
    "dense_ids",
    "combine_ids",
    "GroupStats",
    "group_stats",
    "normalize_in_groups",
]

# ids within [0, _BINCOUNT_FACTOR * N + _BINCOUNT_SLACK) are compressed with bincount (no sort).
_BINCOUNT_FACTOR = 8
_BINCOUNT_SLACK = 1 << 16

Column = torch.Tensor | np.ndarray | Sequence


def factorize(column: Column) -> tuple[torch.Tensor, int]:
    """Dense int64 codes for one key column, in order of first appearance for hashables.

    Args:
        column: integers (tensor, array or list) or any hashable Python values (strings, tuples...).

    Returns:
        ``(codes, n)``: codes in ``[0, n)``, equal exactly where the keys are equal.
    """
    if isinstance(column, torch.Tensor) or (isinstance(column, np.ndarray) and column.dtype.kind in "iub"):
        tensor = torch.as_tensor(column)
        if tensor.dim() != 1:
            raise InvalidArgumentError(
                f"key columns must be 1-D, got shape {tuple(tensor.shape)}: flatten it"
            )
        if tensor.is_floating_point():
            raise InvalidArgumentError(
                f"key columns must be integers or hashables, got dtype {tensor.dtype}: round or cast the keys"
            )
        return dense_ids(tensor.to(torch.int64))
    if isinstance(column, np.ndarray):
        column = column.tolist()
    index: dict = {}
    setdefault = index.setdefault
    try:
        codes = np.fromiter(
            (setdefault(key, len(index)) for key in column), dtype=np.int64, count=len(column)
        )
    except TypeError as err:
        raise InvalidArgumentError(
            f"key columns must hold hashable values (str, int, tuple), got: {err}; convert lists to tuples"
        ) from None
    return torch.from_numpy(codes), len(index)


def dense_ids(ids: torch.Tensor) -> tuple[torch.Tensor, int]:
    """Map arbitrary int64 ids to ``[0, G)`` preserving order; bincount when ids are small, else one sort."""
    n = ids.numel()
    if n == 0:
        return ids.to(torch.int64), 0
    low, high = int(ids.min()), int(ids.max())
    if low >= 0 and high < _BINCOUNT_FACTOR * n + _BINCOUNT_SLACK:
        present = torch.bincount(ids, minlength=high + 1) > 0
        remap = torch.cumsum(present, 0) - 1
        return remap[ids], int(present.sum())
    uniques, inverse = torch.unique(ids, return_inverse=True)
    return inverse, int(uniques.numel())


def group_ids(*columns: Column) -> torch.Tensor:
    """Dense int64 group ids: rows share an id exactly when they agree on every key column.

    Args:
        *columns: one or more equally long key columns (int tensors/arrays/lists, or lists of strings/hashables),
            e.g. ``group_ids(task_ids, agent_names, turn_ids)`` for AT-GRPO or ``group_ids(task_ids, anchors)``.

    Returns:
        ``(N,)`` int64 ids in ``[0, G)``.
    """
    if not columns:
        raise InvalidArgumentError("group_ids needs at least one key column, got none: pass e.g. task_ids")
    lengths = {len(col) for col in columns}
    if len(lengths) != 1:
        raise InvalidArgumentError(f"key columns must have equal lengths, got {sorted(lengths)}: align them")
    return combine_ids(*(factorize(column)[0] for column in columns))


def combine_ids(*id_columns: torch.Tensor) -> torch.Tensor:
    """Dense ids of the tuples ``(a[i], b[i], ...)`` for int64 id tensors of any values (no Python loop)."""
    combined, size = dense_ids(check_ids("ids", id_columns[0]))
    for column in id_columns[1:]:
        codes, n = dense_ids(check_ids("ids", column))
        if size * n < (1 << 62):
            combined, size = dense_ids(combined * n + codes)
        else:  # radix overflow: fall back to unique rows
            _, combined = torch.unique(torch.stack([combined, codes], 1), dim=0, return_inverse=True)
            size = int(combined.max()) + 1 if combined.numel() else 0
    return combined


@dataclass(frozen=True)
class GroupStats:
    """Per-group statistics, indexed by dense group id; ``inverse[i]`` is row i's group."""

    inverse: torch.Tensor  # (N,) int64
    count: torch.Tensor  # (G,) float64
    mean: torch.Tensor  # (G,) float64
    std: torch.Tensor  # (G,) float64, Bessel-corrected; 0 for singleton groups


def group_stats(values: torch.Tensor, ids: torch.Tensor) -> GroupStats:
    """Size, mean and Bessel-corrected std of ``values`` per id, in float64, by two ``index_add_`` passes."""
    ids = check_ids("group_ids", ids)
    inverse, n_groups = dense_ids(ids)
    x = values.to(torch.float64)
    count = torch.zeros(n_groups, dtype=torch.float64).index_add_(0, inverse, torch.ones_like(x))
    mean = torch.zeros(n_groups, dtype=torch.float64).index_add_(0, inverse, x) / count
    centred = x - mean[inverse]
    sq = torch.zeros(n_groups, dtype=torch.float64).index_add_(0, inverse, centred * centred)
    std = torch.sqrt(sq / (count - 1).clamp_min(1.0))
    return GroupStats(inverse, count, mean, std)


def normalize_in_groups(
    values: torch.Tensor, ids: torch.Tensor, *, scale_by_std: bool = True, eps: float = 1e-6
) -> torch.Tensor:
    """``(x - mean_g) / (std_g + eps)`` (or ``x - mean_g``) per group; singleton groups give exactly 0."""
    stats = group_stats(values, ids)
    out = values.to(torch.float64) - stats.mean[stats.inverse]
    if scale_by_std:
        out = out / (stats.std[stats.inverse] + eps)
    out = torch.where(stats.count[stats.inverse] > 1, out, torch.zeros_like(out))
    return out.to(values.dtype)
