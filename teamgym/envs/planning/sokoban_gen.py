"""Sokoban generation by reverse play, and the forward breadth-first solver that verifies every map.

A room is a square of walls around a floor with a few inner walls (the floor stays connected). Boxes start on
goals; the player then walks at random and, now and then, *pulls* the box behind it (the reverse of a push),
as in the generator of Racanière et al., 2017 ("Imagination-Augmented Agents", arXiv 1707.06203) and
gym-sokoban. Every reverse move can be undone by a forward move, so the map is solvable; the forward solver
still checks it and measures the optimal number of moves, and maps whose search is too large for a quick
program are dropped.

Positions are ``(row, column)``; a warehouse is a :class:`Level` (walls and goals) plus a :class:`Layout`
(the player and the sorted boxes).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from teamgym.envs.planning.parsing import MOVE_NAMES

__all__ = ["Level", "Layout", "Cell", "push", "solve_sokoban", "generate_sokoban", "MAX_SEARCH_STATES"]

Cell = tuple[int, int]
#: Maps whose forward search visits more states than this are dropped: an honest BFS program must stay fast.
MAX_SEARCH_STATES = 20_000


@dataclass(frozen=True)
class Level:
    """The fixed part of a warehouse: its side, its walls and the goal squares."""

    side: int
    walls: frozenset[Cell]
    goals: tuple[Cell, ...]


@dataclass(frozen=True)
class Layout:
    """The moving part: the player's cell and the boxes (sorted, so that equal layouts compare equal)."""

    player: Cell
    boxes: tuple[Cell, ...]


def push(level: Level, layout: Layout, move: str) -> Layout | None:
    """The layout after one forward move (a step, or a push of the box ahead), or ``None`` if blocked."""
    dr, dc = MOVE_NAMES[move]
    r, c = layout.player
    step = (r + dr, c + dc)
    if step in level.walls:
        return None
    if step not in layout.boxes:
        return Layout(step, layout.boxes)
    beyond = (r + 2 * dr, c + 2 * dc)
    if beyond in level.walls or beyond in layout.boxes:
        return None
    return Layout(step, tuple(sorted(beyond if box == step else box for box in layout.boxes)))


def solve_sokoban(level: Level, layout: Layout, *, max_states: int = MAX_SEARCH_STATES) -> list[str] | None:
    """A shortest plan (fewest moves) putting every box on a goal; ``[]`` if already solved, ``None`` if there
    is none or the search visits more than ``max_states`` layouts."""
    side = level.side
    # Cells as ints (row * side + column) and boxes as sorted tuples: the search is the generator's hot loop.
    wall = bytearray(side * side)
    for r, c in level.walls:
        wall[r * side + c] = 1
    steps = [(move, dr * side + dc) for move, (dr, dc) in MOVE_NAMES.items()]
    goals = tuple(sorted(r * side + c for r, c in level.goals))
    start = (layout.player[0] * side + layout.player[1], tuple(sorted(r * side + c for r, c in layout.boxes)))
    parent: dict[tuple[int, tuple[int, ...]], tuple[tuple[int, tuple[int, ...]], str] | None] = {start: None}
    queue = deque([start])
    while queue:
        current = queue.popleft()
        player, boxes = current
        if boxes == goals:
            plan: list[str] = []
            node = parent[current]
            while node is not None:
                current, move = node
                plan.append(move)
                node = parent[current]
            return plan[::-1]
        for move, delta in steps:
            step = player + delta
            if wall[step]:
                continue
            moved = boxes
            if step in boxes:
                beyond = step + delta
                if wall[beyond] or beyond in boxes:
                    continue
                moved = tuple(sorted(beyond if box == step else box for box in boxes))
            after = (step, moved)
            if after not in parent:
                parent[after] = (current, move)
                queue.append(after)
        if len(parent) > max_states:
            return None
    return None


def _room(rng: np.random.Generator, side: int, wall_density: float) -> tuple[frozenset[Cell], list[Cell]]:
    """Outer walls, random inner walls, and the floor cells, which stay connected."""
    while True:
        walls = {(r, c) for r in range(side) for c in range(side) if r in (0, side - 1) or c in (0, side - 1)}
        inner = [(r, c) for r in range(1, side - 1) for c in range(1, side - 1)]
        walls |= {cell for cell, x in zip(inner, rng.random(len(inner)), strict=True) if x < wall_density}
        floor = [cell for cell in inner if cell not in walls]
        if floor and _connected(floor):
            return frozenset(walls), floor


def _connected(floor: list[Cell]) -> bool:
    cells = set(floor)
    seen = {floor[0]}
    queue = deque([floor[0]])
    while queue:
        r, c = queue.popleft()
        for dr, dc in MOVE_NAMES.values():
            nxt = (r + dr, c + dc)
            if nxt in cells and nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return len(seen) == len(cells)


def _reverse_play(rng: np.random.Generator, level: Level, player: Cell, steps: int) -> Layout:
    """Walk ``steps`` random moves from the solved layout, pulling the box behind the player 80% of the
    time."""
    boxes = set(level.goals)
    moves = list(MOVE_NAMES.values())
    for _ in range(steps):
        dr, dc = moves[int(rng.integers(4))]
        r, c = player
        ahead = (r + dr, c + dc)
        if ahead in level.walls or ahead in boxes:
            continue
        behind = (r - dr, c - dc)
        if behind in boxes and rng.random() < 0.8:
            boxes.remove(behind)
            boxes.add(player)
        player = ahead
    return Layout(player, tuple(sorted(boxes)))


def generate_sokoban(
    rng: np.random.Generator, *, side: int, num_boxes: int, min_moves: int = 4
) -> tuple[Level, Layout, int]:
    """A solvable warehouse: level, start layout (no box on a goal), optimal number of moves (>= min_moves).

    Deterministic in ``rng``'s state.
    """
    while True:
        walls, floor = _room(rng, side, wall_density=0.12)
        if len(floor) < num_boxes + 3:
            continue
        picks = rng.choice(len(floor), size=num_boxes + 1, replace=False)
        goals = tuple(sorted(floor[int(i)] for i in picks[:-1]))
        level = Level(side, walls, goals)
        layout = _reverse_play(
            rng, level, floor[int(picks[-1])], steps=int(rng.integers(8 * side, 16 * side))
        )
        if set(layout.boxes) & set(goals):
            continue
        plan = solve_sokoban(level, layout)
        if plan is not None and len(plan) >= min_moves:
            return level, layout, len(plan)
