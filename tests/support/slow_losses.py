"""Slow, obvious references of the losses the library fits with, term by term in plain Python."""

from __future__ import annotations

import math


def slow_bce(logits: list[float], labels: list[float]) -> float:
    """The mean binary cross-entropy of labels in [0, 1] under ``sigmoid(logit)``."""
    total = 0.0
    for z, y in zip(logits, labels, strict=True):
        p = 1.0 / (1.0 + math.exp(-z))
        total += -(y * math.log(p) + (1.0 - y) * math.log(1.0 - p))
    return total / len(logits)


def slow_mse(outputs: list[float], targets: list[float]) -> float:
    """The mean squared error of outputs against targets."""
    return sum((z - y) ** 2 for z, y in zip(outputs, targets, strict=True)) / len(outputs)
