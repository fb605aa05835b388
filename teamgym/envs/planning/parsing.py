"""Reading plans out of completions and program output: lenient about layout, never guessing.

A plan is introduced by a marker line, ``Actions: U,R,R,D`` (also ``**Actions List**: ["U", "R"]``,
``actions =``, ``Final actions:``, any case), or given as ``\\boxed{...}``. The *last* marker wins, so a
completion may reason first and answer at the end. Without a marker there is no plan: moves are never fished
out of free text.

Two plan kinds share the marker:

* moves (``plan_path``, ``sokoban``): ``U D L R`` or ``up down left right`` separated by commas, spaces or
  quotes, inside optional brackets; a run like ``UURD`` counts as four moves. Any other token makes the plan
  unreadable.
* placements (``sudoku``): ``r1c2=3`` tokens (1-based row and column), or the whole grid written after the
  marker (rows of digits, ``0`` or ``.`` for an empty cell, brackets and commas allowed).

>>> parse_moves("I go right twice.\\nActions: R, R, D")
['R', 'R', 'D']
>>> parse_moves('**Actions List**: ["U", "L"]')
['U', 'L']
>>> parse_moves("Go right then down") is None
True
>>> parse_placements("Actions: r1c1=4 r2c3=1", size=4)
[(0, 0, 4), (1, 2, 1)]
"""

from __future__ import annotations

import re

from teamgym.core.text import extract_boxed

__all__ = ["MOVE_NAMES", "find_plan_text", "parse_moves", "parse_placements", "Placement"]

#: The four moves and their (row, column) offsets.
MOVE_NAMES: dict[str, tuple[int, int]] = {"U": (-1, 0), "D": (1, 0), "L": (0, -1), "R": (0, 1)}

#: (row, column, digit), 0-based row and column; digit 0 clears a cell.
Placement = tuple[int, int, int]

_MARKER = re.compile(
    r"^[ \t>*_#`-]*(?:final[ \t]+)?actions?(?:[ \t]+list)?[ \t*_`]*[:=][ \t*_`]*",
    re.IGNORECASE | re.MULTILINE,
)
_WORDS = {"U": "U", "UP": "U", "D": "D", "DOWN": "D", "L": "L", "LEFT": "L", "R": "R", "RIGHT": "R"}
_SEPARATORS = re.compile(r"[\s,;\[\]()'\"`*]+")
_PLACEMENT = re.compile(r"r(\d{1,2})\s*c(\d{1,2})\s*=\s*(\d{1,2})", re.IGNORECASE)
_GRID_LINE = re.compile(r"^[\s\d.,\[\]|_+\-]*$")


def find_plan_text(text: str) -> str | None:
    """The last plan in ``text``: what follows the last marker, else the last ``\\boxed{}``, else None."""
    markers = list(_MARKER.finditer(text))
    if markers:
        return text[markers[-1].end() :]
    return extract_boxed(text)


def parse_moves(text: str, *, max_moves: int = 10_000) -> list[str] | None:
    """The moves of the last plan in ``text`` (``"U" "D" "L" "R"``), or ``None`` when none is readable.

    The plan is the rest of the marker's line (or the boxed content). An empty plan (``Actions: []``) is
    ``[]``. A plan of more than ``max_moves`` moves is unreadable (``None``), so that garbage cannot cost
    unbounded work.
    """
    plan = find_plan_text(text)
    if plan is None:
        return None
    line = plan.split("\n", 1)[0].strip().rstrip(".")
    moves: list[str] = []
    for token in _SEPARATORS.split(line):
        if not token:
            continue
        word = token.upper()
        if word in _WORDS:
            moves.append(_WORDS[word])
        elif set(word) <= set(MOVE_NAMES):
            moves.extend(word)
        else:
            return None
        if len(moves) > max_moves:
            return None
    return moves


def parse_placements(text: str, *, size: int) -> list[Placement] | None:
    """The placements of the last plan in ``text`` for a ``size`` x ``size`` sudoku, or ``None``.

    ``r<row>c<col>=<digit>`` tokens give placements (1-based row and column, as people write them; digit 0
    clears a cell). Otherwise the lines after the marker that hold only digits, dots, brackets, commas and
    rule characters (``|``, ``-``, ``+``) are read as the whole grid, one character per cell (the first line
    may share the marker's line; a blank line ends it); it must have exactly ``size * size`` cells, and every
    cell becomes a placement (``0`` or ``.`` as digit 0), in reading order. An empty plan (``Actions: []``) is
    ``[]``. Coordinates and digits are not range-checked here: the env judges each placement.
    """
    plan = find_plan_text(text)
    if plan is None:
        return None
    first_line = plan.split("\n", 1)[0]
    if _PLACEMENT.search(first_line):
        rest = _PLACEMENT.sub(" ", first_line)
        if _SEPARATORS.sub("", rest).rstrip("."):
            return None
        return [(int(r) - 1, int(c) - 1, int(d)) for r, c, d in _PLACEMENT.findall(first_line)]
    cells: list[int] = []
    for line in plan.split("\n"):
        if not _GRID_LINE.match(line) or (cells and not line.strip()):
            break
        cells.extend(0 if ch == "." else int(ch) for ch in re.findall(r"[\d.]", line))
        if len(cells) > size * size:
            return None
    if not cells and not _SEPARATORS.sub("", first_line):
        return []
    if len(cells) != size * size:
        return None
    return [(i // size, i % size, digit) for i, digit in enumerate(cells)]
