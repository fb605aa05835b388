"""Learning curves from ``metrics.jsonl`` as inline SVG: no plotting library, no script, nothing to download.

>>> rows = [{"step": 0, "success": 0.5}, {"step": 1, "success": 0.75}]
>>> svg = learning_curves(rows)
>>> svg.count("<svg"), "success" in svg
(1, True)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape
from typing import Any

__all__ = ["PANELS", "learning_curves", "panel_svg"]

#: (title, metric keys) of each panel; ``reward/*/mixed`` stands for every agent's key of that shape.
PANELS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("mixed reward per agent", ("reward/*/mixed",)),
    ("success", ("success", "eval/success", "eval/sampled_success")),
    ("advantage", ("advantage/min", "advantage/mean", "advantage/max", "advantage/std")),
    ("entropy and KL", ("entropy", "kl")),
    ("loss and clip fraction", ("loss", "clip_fraction")),
    ("seconds per step", ("step_seconds",)),
)
COLORS = ("#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#4b5563", "#be185d")
WIDTH, HEIGHT = 340, 190
LEFT, RIGHT, TOP, BOTTOM = 46, 10, 44, 22


def learning_curves(metrics: Sequence[dict[str, Any]]) -> str:
    """One SVG panel per entry of :data:`PANELS` that has data, or ``""`` when there is none."""
    panels = []
    for title, patterns in PANELS:
        series = _series(metrics, _expand(patterns, metrics))
        if series:
            panels.append(panel_svg(title, series))
    return "\n".join(panels)


def _expand(patterns: Sequence[str], metrics: Sequence[dict[str, Any]]) -> list[str]:
    keys: list[str] = []
    present = sorted({key for row in metrics for key in row})
    for pattern in patterns:
        if "*" in pattern:
            head, tail = pattern.split("*")
            keys.extend(k for k in present if k.startswith(head) and k.endswith(tail) and k.count("/") == 2)
        elif pattern in present:
            keys.append(pattern)
    return keys


def _series(metrics: Sequence[dict[str, Any]], keys: Sequence[str]) -> dict[str, list[tuple[float, float]]]:
    out = {}
    for key in keys:
        points = [
            (float(row["step"]), float(row[key]))
            for row in metrics
            if isinstance(row.get(key), (int, float)) and math.isfinite(row[key]) and "step" in row
        ]
        if points:
            out[key] = points
    return out


def _short_labels(keys: list[str]) -> list[str]:
    """The keys without the ``/``-separated parts they all share at the front and back (``reward/tool/mixed`` and
    ``reward/planner/mixed`` -> ``tool``, ``planner``)."""
    if len(keys) < 2:
        return keys
    split = [key.split("/") for key in keys]
    head = 0
    while all(len(parts) > head + 1 and parts[head] == split[0][head] for parts in split):
        head += 1
    tail = 0
    while all(len(parts) > head + tail + 1 and parts[-1 - tail] == split[0][-1 - tail] for parts in split):
        tail += 1
    return ["/".join(parts[head : len(parts) - tail]) for parts in split]


def panel_svg(title: str, series: dict[str, list[tuple[float, float]]]) -> str:
    """One chart: a line (and dots, when few) per series, min/max ticks on both axes, a legend."""
    xs = [x for points in series.values() for x, _ in points]
    ys = [y for points in series.values() for _, y in points]
    x_low, x_high = min(xs), max(xs)
    y_low, y_high = min(ys), max(ys)
    if y_high == y_low:
        y_low, y_high = y_low - 0.5, y_high + 0.5
    if x_high == x_low:
        x_low, x_high = x_low - 0.5, x_high + 0.5
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(x: float) -> float:
        return LEFT + (x - x_low) / (x_high - x_low) * plot_w

    def py(y: float) -> float:
        return TOP + (1 - (y - y_low) / (y_high - y_low)) * plot_h

    parts = [
        f'<svg class="curve" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" '
        f'role="img" aria-label="{escape(title)}">',
        f'<text x="{LEFT}" y="14" class="curve-title">{escape(title)}</text>',
        f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" class="curve-frame"/>',
    ]
    for value in (y_low, (y_low + y_high) / 2, y_high):
        shown = 0.0 if abs(value) < 1e-6 * (y_high - y_low) else value  # not -5.96e-08 for a mean of 0
        parts.append(f'<text x="{LEFT - 4}" y="{py(value) + 4:.1f}" class="tick" text-anchor="end">{shown:.3g}</text>')
    for value in sorted({x_low, x_high}):
        parts.append(f'<text x="{px(value):.1f}" y="{HEIGHT - 6}" class="tick" text-anchor="middle">{value:g}</text>')
    legend_x, legend_y = LEFT, 28
    for index, (points, label) in enumerate(zip(series.values(), _short_labels(list(series)))):
        color = COLORS[index % len(COLORS)]
        label = escape(label)
        span = 20 + 6 * len(label)
        if legend_x + span > WIDTH and legend_x > LEFT:
            legend_x, legend_y = LEFT, legend_y + 12
        parts.append(
            f'<rect x="{legend_x}" y="{legend_y - 8}" width="8" height="8" fill="{color}"/>'
            f'<text x="{legend_x + 11}" y="{legend_y}" class="legend">{label}</text>'
        )
        legend_x += span
        coords = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in points)
        parts.append(f'<polyline points="{coords}" fill="none" stroke="{color}" stroke-width="1.5"/>')
        if len(points) <= 60:
            parts.extend(
                f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="2.5" fill="{color}"><title>{label} '
                f"step {x:g}: {y:.4g}</title></circle>"
                for x, y in points
            )
    parts.append("</svg>")
    return "".join(parts)
