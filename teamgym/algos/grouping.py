"""Group ids from key columns, and vectorised per-group statistics (mean, Bessel std, size).

Every group-relative estimator reduces to: turn key columns into int64 group codes, then compute a statistic per
group with ``bincount``/``scatter_add_`` and gather it back per row. Both steps are O(N) tensor operations except
one sort when ids are sparse (``torch.unique``); strings are factorised with a dict (about 0.2 s per million on one
core).

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

from teamgym.algos._checks import check_ids, check_output, check_same_length
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
# A group std at most this fraction of the group mean may be a rounding error of equal values (checked exactly).
_ROUNDING_SPREAD = 1e-6
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
    low, high = (int(v) for v in torch.aminmax(ids))
    if low >= 0 and high < _BINCOUNT_FACTOR * n + _BINCOUNT_SLACK:
        present = torch.zeros(high + 1, dtype=torch.bool, device=ids.device).index_fill_(0, ids, True)
        n_present = int(present.sum())
        if n_present == high + 1:  # already dense: skip the gather
            return ids, n_present
        remap = torch.cumsum(present, 0) - 1
        return remap.index_select(0, ids), n_present
    uniques, inverse = torch.unique(ids, return_inverse=True)
    return inverse, int(uniques.numel())


def group_ids(*columns: Column) -> torch.Tensor:
    """Dense int64 group ids: rows share an id exactly when they agree on every key column.

    Args:
        *columns: one or more equally long key columns (int tensors/arrays/lists, or lists of
        strings/hashables),
            e.g. ``group_ids(task_ids, agent_names, turn_ids)`` for AT-GRPO or ``group_ids(task_ids,
            anchors)``.

    Returns:
        ``(N,)`` int64 ids in ``[0, G)``.
    """
    if not columns:
        raise InvalidArgumentError("group_ids needs at least one key column, got none: pass e.g. task_ids")
    lengths = {len(col) for col in columns}
    if len(lengths) != 1:
        raise InvalidArgumentError(f"key columns must have equal lengths, got {sorted(lengths)}: align them")
    return combine_ids(*(factorize(column)[0] for column in columns))


def _bincount_limit(n: int) -> int:
    return _BINCOUNT_FACTOR * n + _BINCOUNT_SLACK


def _nested(inner: torch.Tensor, n_inner: int, outer: torch.Tensor, n_outer: int) -> bool:
    """Whether ``outer`` is a function of ``inner`` (then ``inner`` alone identifies the pairs)."""
    if n_inner > _bincount_limit(inner.numel()):
        return False
    owner = torch.full((n_inner,), -1, dtype=torch.int64, device=inner.device)
    owner.scatter_(0, inner, outer)
    return bool(torch.equal(owner.index_select(0, inner), outer))


def _radix_codes(ids: torch.Tensor) -> tuple[torch.Tensor, int]:
    """Codes in ``[0, n)`` for radix folding: the ids themselves if small and non-negative, else dense."""
    if ids.numel() == 0:
        return ids, 0
    low, high = (int(v) for v in torch.aminmax(ids))
    if low >= 0 and high < _bincount_limit(ids.numel()):
        return ids, high + 1
    return dense_ids(ids)


def combine_ids(*id_columns: torch.Tensor) -> torch.Tensor:
    """Dense ids of the tuples ``(a[i], b[i], ...)`` for int64 id tensors of any values (no Python loop).

    Columns are folded by mixed radix while the key range stays small (no sort); when one column is a function
    of the other (anchor ids built per group are), the finer one alone is kept; otherwise one sort.
    """
    return dense_ids(combine_codes(*id_columns)[0])[0]


def combine_codes(*id_columns: torch.Tensor) -> tuple[torch.Tensor, int]:
    """Like :func:`combine_ids` but returns ``(codes, size)``: codes in ``[0, size)``, not necessarily dense.

    Cheaper (no final remap); ``size`` stays below a few times N, so codes can index bincount/scatter tables.
    """
    return _fold(id_columns, nested_first=False)


def _partition_codes(*id_columns: torch.Tensor) -> tuple[torch.Tensor, int]:
    """Like :func:`combine_codes` (the same groups), for callers that only need the grouping, not ordered codes.

    Where the key range is too large to fold, whether one column is a function of the other is tested on the
    columns as given, before any remap to dense ids (a nested column, such as anchor ids built per group, then
    needs no remap at all). The codes can differ from :func:`combine_codes`' codes, the groups cannot.
    """
    return _fold(id_columns, nested_first=True)


def _fold(id_columns: tuple[torch.Tensor, ...], *, nested_first: bool) -> tuple[torch.Tensor, int]:
    if not id_columns:
        raise InvalidArgumentError("combine_ids needs at least one id column, got none")
    check_same_length(**{f"column {i}": check_ids(f"column {i}", c) for i, c in enumerate(id_columns)})
    combined, size = _radix_codes(check_ids("ids", id_columns[0]))
    for column in id_columns[1:]:
        codes, n = _radix_codes(check_ids("ids", column))
        limit = _bincount_limit(codes.numel())
        if size * n < limit:
            # combined * n + codes in one pass (integer arithmetic: exact)
            combined, size = torch.add(codes, combined, alpha=n), size * n
            continue
        # is one column a function of the other? Tested before the remap (nested_first: then no remap) or after it
        # (the dense codes may fold after all); a remap keeps nesting, so one test suffices
        tested = nested_first
        if nested_first:
            if _nested(codes, n, combined, size):
                combined, size = codes, n
                continue
            if _nested(combined, size, codes, n):
                continue
        (combined, size), (codes, n) = dense_ids(combined), dense_ids(codes)
        if size * n < limit:
            combined, size = torch.add(codes, combined, alpha=n), size * n
        elif not tested and _nested(codes, n, combined, size):
            combined, size = codes, n
        elif not tested and _nested(combined, size, codes, n):
            continue
        elif size * n < (1 << 62):
            combined, size = dense_ids(torch.add(codes, combined, alpha=n))
        else:  # radix overflow: unique rows
            _, combined = torch.unique(torch.stack([combined, codes], 1), dim=0, return_inverse=True)
            size = int(combined.max()) + 1 if combined.numel() else 0
    return combined, size


@dataclass(frozen=True)
class GroupStats:
    """Per-group statistics, indexed by dense group id; ``inverse[i]`` is row i's group."""

    inverse: torch.Tensor  # (N,) int64
    count: torch.Tensor  # (G,) float64
    mean: torch.Tensor  # (G,) float64
    std: torch.Tensor  # (G,) float64, Bessel-corrected; exactly 0 for singleton and constant groups
    centred: torch.Tensor  # (N,) float64, value minus its group mean; exactly 0 in constant groups


def _centre(values: torch.Tensor, codes: torch.Tensor, size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(count, centred)`` per code: group sizes (float64) and each value minus its group mean, exactly 0 in
    constant groups (no std needed to find them where the sums are exact, see :func:`_exact_sums`)."""
    if not _exact_sums(values):
        stats = _stats(values, codes, size)
        return stats.count, stats.centred
    x = values.to(torch.float64)
    count, mean = _count_mean(x, codes, size)
    return count, _minus_gathered(x, mean, codes)


def _count_mean(x: torch.Tensor, codes: torch.Tensor, size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Group sizes and means (float64) of ``x`` (float64) over codes in ``[0, size)``; empty codes get mean 0."""
    count = torch.bincount(codes, minlength=size).to(torch.float64)
    # scatter_add_ sums in row order like bincount(weights=...), and is cheaper on CPU
    total = torch.zeros(size, dtype=torch.float64, device=x.device).scatter_add_(0, codes, x)
    return count, total.div_(count.clamp_min(1.0))


def _minus_gathered(x: torch.Tensor, table: torch.Tensor, codes: torch.Tensor) -> torch.Tensor:
    """``x - table[codes]``, written over the gathered buffer (fewer fresh pages: each costs a page fault)."""
    gathered = table.index_select(0, codes)
    return torch.sub(x, gathered, out=gathered)


def _exact_sums(values: torch.Tensor) -> bool:
    """Whether float64 group sums of ``values`` are exact for constant groups: a value with at most 24 significant
    bits (float32, float16, bfloat16) times a count below 2**29 fits float64's 53 bits, so every partial sum of k
    equal values is exactly k * v and the mean ``k * v / k`` is exactly v (a correctly rounded quotient that is
    representable)."""
    return values.dtype in (torch.float32, torch.float16, torch.bfloat16) and values.numel() < (1 << 29)


def _stats(values: torch.Tensor, codes: torch.Tensor, size: int) -> GroupStats:
    """Stats over codes in ``[0, size)``; see :func:`_stats_and_spare`."""
    return _stats_and_spare(values, codes, size)[0]


def _stats_and_spare(values: torch.Tensor, codes: torch.Tensor, size: int) -> tuple[GroupStats, torch.Tensor | None]:
    """Stats over codes in ``[0, size)``; unused codes get count 0, mean 0, std 0.

    A group whose values are all equal gets centred values and std of exactly 0: its float mean can differ from the
    value by a rounding error (three 0.7s average to 0.7 - 1e-16), which a division by that std would blow up. Such a
    spread is far below any real one, so only groups whose std is that small are compared value by value. Narrow
    floats need no such comparison: their float64 sums are exact (:func:`_exact_sums`), so equal values already
    centre to exactly 0.

    Also returns a float64 buffer of one value per row that is no longer needed (None if there is none), for the
    caller's next per-row result: a reused buffer costs no fresh pages.
    """
    x = values.to(torch.float64)
    count, mean = _count_mean(x, codes, size)
    centred = _minus_gathered(x, mean, codes)
    exact = _exact_sums(values)
    # squares over x's buffer where x is a copy no longer needed (narrow floats: no constant-group check below)
    squares = torch.mul(centred, centred, out=x) if exact else centred * centred
    sq = torch.zeros(size, dtype=torch.float64, device=x.device).scatter_add_(0, codes, squares)
    std = sq.div_((count - 1).clamp_min_(1.0)).sqrt_()
    if exact:
        return GroupStats(codes, count, mean, std, centred), x
    suspect = (std > 0) & (std <= _ROUNDING_SPREAD * mean.abs())
    if bool(suspect.any()):
        member = torch.zeros(size, dtype=torch.float64, device=x.device).index_copy_(0, codes, x)  # any member
        unequal = (x != member.index_select(0, codes)).to(torch.float64)
        constant = suspect & (torch.bincount(codes, weights=unequal, minlength=size) == 0)
        centred = torch.where(constant.index_select(0, codes), 0.0, centred)
        std = torch.where(constant, 0.0, std)
    return GroupStats(codes, count, mean, std, centred), None


def group_stats(values: torch.Tensor, ids: torch.Tensor) -> GroupStats:
    """Size, mean and Bessel-corrected std of ``values`` per id, in float64 (two-pass, numerically stable)."""
    inverse, n_groups = dense_ids(check_ids("group_ids", ids))
    return _stats(values, inverse, n_groups)


def sparse_group_stats(values: torch.Tensor, ids: torch.Tensor) -> GroupStats:
    """:func:`group_stats` without the final remap (cheaper when ids are small non-negative integers).

    ``inverse`` holds codes in ``[0, size)`` rather than dense ids; unused codes have count 0.
    """
    return _stats(values, *_radix_codes(check_ids("group_ids", ids)))


def normalize_in_groups(
    values: torch.Tensor, ids: torch.Tensor, *, scale_by_std: bool = True, eps: float = 1e-6
) -> torch.Tensor:
    """``(x - mean_g) / (std_g + eps)`` (or ``x - mean_g``) per group; singleton and constant groups give exactly 0
    (for any ``eps``, 0 included)."""
    codes, size = _radix_codes(check_ids("group_ids", ids))
    normalized = _normalize_codes(values, codes, size, scale_by_std=scale_by_std, eps=eps).to(values.dtype)
    return normalized if scale_by_std else check_output("the advantages", normalized)


def _normalize_codes(
    values: torch.Tensor, codes: torch.Tensor, size: int, *, scale_by_std: bool, eps: float
) -> torch.Tensor:
    """:func:`normalize_in_groups` over checked codes in ``[0, size)``, in float64 (the caller casts and checks)."""
    if not scale_by_std:
        return _centre(values, codes, size)[1]
    stats, spare = _stats_and_spare(values, codes, size)
    # singleton and constant groups give 0 whatever eps (eps = 0 would otherwise give 0/0); their std is exactly 0
    # (a singleton centres to exactly 0), so std > 0 alone marks the groups with a spread
    # (1.0 / x is reciprocal(x) * 1.0; a std is never NaN, so std == 0 is the complement of std > 0)
    factor = (stats.std + eps).reciprocal_().masked_fill_(stats.std == 0, 0.0)
    return torch.index_select(factor, 0, codes, out=spare).mul_(stats.centred)
