"""Sudoku generation: a full grid by randomised backtracking, then cells removed while the solution stays
unique.

Grids are flat tuples of ``size * size`` digits (0 = empty), row by row; ``size`` is 4 (2x2 boxes) or 9 (3x3).
The solver is a bitmask backtracking search that always branches on the empty cell with the fewest candidates;
it counts solutions up to a limit, which is how uniqueness is verified.

>>> import numpy as np
>>> puzzle, solution = generate_sudoku(np.random.default_rng(0), size=4, givens=6)
>>> sum(1 for d in puzzle if d), count_solutions(puzzle, 4)
(6, 1)
"""

from __future__ import annotations

import functools
import math

import numpy as np

__all__ = ["box_side", "generate_sudoku", "count_solutions", "solve_sudoku", "peers"]


def box_side(size: int) -> int:
    """The side of a box: 2 for 4x4 grids, 3 for 9x9."""
    return math.isqrt(size)


@functools.cache
def peers(size: int) -> tuple[tuple[int, ...], ...]:
    """For each cell, the other cells of its row, column and box."""
    side = box_side(size)
    out = []
    for i in range(size * size):
        r, c = divmod(i, size)
        br, bc = r - r % side, c - c % side
        group = {r * size + k for k in range(size)} | {k * size + c for k in range(size)}
        group |= {(br + dr) * size + bc + dc for dr in range(side) for dc in range(side)}
        group.discard(i)
        out.append(tuple(sorted(group)))
    return tuple(out)


@functools.cache
def _units(size: int) -> tuple[tuple[int, int, int], ...]:
    """For each cell, its (row, column, box) indices."""
    side = box_side(size)
    return tuple((r, c, (r // side) * side + c // side) for r in range(size) for c in range(size))


def _search(
    grid: tuple[int, ...] | list[int], size: int, limit: int, rng: np.random.Generator | None
) -> list[tuple[int, ...]]:
    """Up to ``limit`` solutions of ``grid``, by backtracking on the cell with the fewest candidates."""
    units = _units(size)
    full = (1 << size) - 1
    cells = list(grid)
    rows, cols, boxes = [0] * size, [0] * size, [0] * size
    for i, digit in enumerate(cells):
        if digit:
            r, c, b = units[i]
            bit = 1 << (digit - 1)
            if (rows[r] | cols[c] | boxes[b]) & bit:
                return []  # the givens already clash
            rows[r] |= bit
            cols[c] |= bit
            boxes[b] |= bit
    empty = [i for i, digit in enumerate(cells) if not digit]
    found: list[tuple[int, ...]] = []

    def descend(remaining: int) -> None:
        if remaining == 0:
            found.append(tuple(cells))
            return
        best, best_options, best_count = -1, 0, size + 1
        for i in empty:
            if cells[i]:
                continue
            r, c, b = units[i]
            options = full & ~(rows[r] | cols[c] | boxes[b])
            count = options.bit_count()
            if count < best_count:
                best, best_options, best_count = i, options, count
                if count <= 1:
                    break
        if best_count == 0:
            return
        digits = [d + 1 for d in range(size) if best_options >> d & 1]
        if rng is not None:
            digits = [digits[k] for k in rng.permutation(len(digits))]
        r, c, b = units[best]
        for digit in digits:
            bit = 1 << (digit - 1)
            cells[best] = digit
            rows[r] |= bit
            cols[c] |= bit
            boxes[b] |= bit
            descend(remaining - 1)
            rows[r] &= ~bit
            cols[c] &= ~bit
            boxes[b] &= ~bit
            cells[best] = 0
            if len(found) >= limit:
                return

    descend(len(empty))
    return found


def count_solutions(grid: tuple[int, ...] | list[int], size: int, limit: int = 2) -> int:
    """How many solutions ``grid`` has, counting up to ``limit``."""
    return len(_search(grid, size, limit, None))


def solve_sudoku(grid: tuple[int, ...] | list[int], size: int) -> tuple[int, ...] | None:
    """A solution of ``grid`` (the first the search finds), or ``None`` when it has none."""
    found = _search(grid, size, 1, None)
    return found[0] if found else None


def generate_sudoku(
    rng: np.random.Generator, *, size: int, givens: int
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """A puzzle with a unique solution and about ``givens`` filled cells, and its solution.

    Cells are removed in random order, each removal kept only if the solution stays unique, until ``givens``
    cells remain; when no further cell can be removed the puzzle keeps a few more.
    """
    solution = _search([0] * (size * size), size, 1, rng)[0]
    puzzle = list(solution)
    filled = size * size
    for i in rng.permutation(size * size):
        if filled <= givens:
            break
        digit, puzzle[i] = puzzle[i], 0
        if count_solutions(puzzle, size) == 1:
            filled -= 1
        else:
            puzzle[i] = digit
    return tuple(puzzle), solution
