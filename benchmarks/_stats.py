"""Shared by the benchmarks that report seeds: percentile bootstrap intervals of a mean, and of a mean paired
difference. numpy only (no torch), so that a report is written without the trainer."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

__all__ = ["bootstrap_ci", "paired_differences"]


def bootstrap_ci(values: list[float], *, rounds: int = 10_000, seed: int = 0) -> tuple[float, float]:
    """95% percentile bootstrap interval of the mean of ``values`` (one value: that value twice)."""
    data = np.asarray(values, dtype=float)
    if len(data) < 2:
        return float(data.mean()), float(data.mean())
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, len(data), size=(rounds, len(data)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def paired_differences(values: Mapping[int, float], baseline: Mapping[int, float]) -> dict[int, float]:
    """``values[s] - baseline[s]`` for every seed ``s`` both have, in seed order (seeds one side lacks are left
    out: a difference is only taken between runs that share a seed, hence a warm start)."""
    return {s: float(values[s]) - float(baseline[s]) for s in sorted(set(values) & set(baseline))}
