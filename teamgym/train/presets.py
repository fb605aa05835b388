"""Per-env training presets: compact prompts for the tiny CPU model and scripted demonstrations for a warm start.

A character-level 2-layer model cannot read a 1,500-character prompt in useful time, so a preset may render the
same information compactly on the policy side (the env is unchanged and still scores the raw completion). Every
preset is documented with what its prompt shows; none derives the answer for the model.

The three planning presets share one shape. The prompt is the current board, one row per line in the env's own
symbols (no row or column numbers), then ``T>`` for the tool or, for the planner, the plan line the tool's program
printed (its first line with ``Actions``, cut to the preset's width; ``-`` when there is none) and ``P>``. The tool
answers with a program that prints a plan (```` ```\nprint('Actions: R,D')\n``` ````, which the sandbox answers
without running it) and the planner with the plan line. Demonstrations are the env's ``oracle`` planner's plan from
the current state, written in those two formats.

``plan_path-v0``, ``-v1`` and ``-v2`` (compact; 4x4 grids, 3 turns): the grid rows with ``#`` (obstacle), ``.``
(free), ``@`` (current position) and ``G`` (goal); plans ``Actions: R,D`` (a shortest path), plan lines cut at 40
characters.

``prompt_format="compact_feedback"`` (plan_path-v0, -v1 and -v2, :data:`FEEDBACK_PRESETS`): the same prompts, and
from the second turn a line after the board with the turn and what the planner's last answer did, as the env's own
prompts say (``t1 ok2 bad1``: 2 moves applied, 1 invalid; ``t1 ok- bad-``: no readable plan); a random first turn
(1-4 random moves) for ``sft_perturb``'s demonstrations of later turns.

``sokoban-v0``, ``-v1`` and ``-v2`` (compact; 5x5 warehouses, i.e. a 3x3 floor inside the walls, 1 box, 3 turns):
the warehouse rows as the env prints them, walls included: ``#`` wall, ``_`` floor, ``.`` goal, ``$`` box, ``*`` box
on a goal, ``@`` player, ``+`` player on a goal; plans ``Actions: U,R,R`` (a fewest-moves solution), plan lines cut at
40 characters.

``sudoku-v0`` and ``-v1`` (compact; 4x4 easy puzzles, 10 givens and 6 empty cells, 3 turns): the grid rows, a digit
per filled cell (givens and the team's placements alike, as the env shows them) and ``.`` per empty cell, without the
box rules; plans ``Actions: r1c2=3, r4c1=2`` (the placements that turn the board into the solution, rows and columns
from 1), plan lines cut at 64 characters.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from teamgym.errors import InvalidArgumentError
from teamgym.rollout.engine import default_prompt

__all__ = ["Preset", "get_preset", "PRESETS", "FEEDBACK_PRESETS"]


@dataclass(frozen=True)
class Preset:
    """How the trainer talks to one env by default.

    Attributes:
        prompt: ``(env, agent) -> prompt text`` given to the policy.
        demonstration: ``(env, agent) -> completion`` of a scripted expert for the warm-start SFT stage, or None.
        env_kwargs: env options the preset is tuned for (overridable from the config).
        max_tokens: completion budget that fits the preset's answers.
        perturbation: ``(env, rng) -> {agent: completion}``: a random first turn (not a demonstration) after which
            the expert takes over, for demonstrations of later turns (``sft_perturb``), or None.
    """

    prompt: Callable[[Any, str], str] = default_prompt
    demonstration: Callable[[Any, str], str] | None = None
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    max_tokens: int = 256
    perturbation: Callable[[Any, np.random.Generator], dict[str, str]] | None = None


def _board(rows: Iterable[str]) -> str:
    """A board as the compact prompts show it: its rows, top to bottom, one per line."""
    return "\n".join(rows)


def _plan_line(text: str, width: int = 40) -> str:
    """The first ``Actions`` line of ``text`` (a program's output, an answer), stripped and cut to ``width``."""
    for line in text.splitlines():
        if "Actions" in line:
            return line.strip()[:width]
    return "-"


def _board_prompt(env: Any, agent: str, board: str, width: int) -> str:
    """``board`` then ``T>`` for the tool; for the planner ``board``, the tool's printed plan line and ``P>``."""
    if agent == "tool":
        return f"{board}\nT>"
    return f"{board}\n{_plan_line(env.unwrapped.state.tool_output, width)}\nP>"


def _oracle_demonstration(env: Any, agent: str, width: int) -> str:
    """The env's oracle planner's plan line: as a program printing it (the tool) or as the answer (the planner)."""
    plan = _plan_line(env.unwrapped.scripted_policy("planner", "oracle")(env.observe("planner")), width)
    if agent == "tool":
        return f"```\nprint('{plan}')\n```"
    return plan


def _feedback(env: Any) -> str:
    """The env's turn and what the planner's last answer did, as a line after the board (empty on the first turn):
    ``t1 ok2 bad1`` (turn 1; 2 moves applied, 1 invalid), ``t1 ok- bad-`` (no readable plan)."""
    base = env.unwrapped
    if base.turn == 0:
        return ""
    last_plan = base.state.last_plan
    applied, invalid = last_plan if isinstance(last_plan, tuple) else ("-", "-")
    return f"\nt{min(base.turn, base.max_turns - 1)} ok{applied} bad{invalid}"


def _plan_path_board(env: Any) -> str:
    base = env.unwrapped
    position, goal = base.state.board, base.task.goal
    return _board("".join("@" if (r, c) == position else "G" if (r, c) == goal else ch for c, ch in enumerate(row))
                  for r, row in enumerate(base.task.grid))


def plan_path_prompt(env: Any, agent: str) -> str:
    """Compact ``plan_path`` prompt: the grid, then ``T>`` (tool) or the tool's printed plan line and ``P>``."""
    return _board_prompt(env, agent, _plan_path_board(env), width=40)


def plan_path_feedback_prompt(env: Any, agent: str) -> str:
    """``plan_path_prompt`` with the turn and the last answer's outcome on a line after the grid (from turn 1)."""
    return _board_prompt(env, agent, _plan_path_board(env) + _feedback(env), width=40)


def plan_path_perturbation(env: Any, rng: np.random.Generator) -> dict[str, str]:
    """A random first turn: 1-4 random moves, printed by the tool's program and answered by the planner."""
    moves = ",".join(rng.choice(list("UDLR"), size=int(rng.integers(1, 5))))
    return {"tool": f"```\nprint('Actions: {moves}')\n```", "planner": f"Actions: {moves}"}


def plan_path_demonstration(env: Any, agent: str) -> str:
    """The oracle planner's shortest plan, as the tool's program or as the planner's answer."""
    return _oracle_demonstration(env, agent, width=40)


def sokoban_prompt(env: Any, agent: str) -> str:
    """Compact ``sokoban`` prompt: the warehouse rows, then ``T>`` (tool) or the tool's printed plan line and ``P>``."""
    base = env.unwrapped
    return _board_prompt(env, agent, _board(base._rows(base.state.board)), width=40)


def sokoban_demonstration(env: Any, agent: str) -> str:
    """The oracle planner's fewest-moves plan, as the tool's program or as the planner's answer."""
    return _oracle_demonstration(env, agent, width=40)


def sudoku_prompt(env: Any, agent: str) -> str:
    """Compact ``sudoku`` prompt: the grid rows (``.`` empty), then ``T>`` (tool) or the tool's plan line and ``P>``."""
    base = env.unwrapped
    size, board = base.size, base.state.board
    rows = ("".join(str(d) if d else "." for d in board[r * size:(r + 1) * size]) for r in range(size))
    return _board_prompt(env, agent, _board(rows), width=64)


def sudoku_demonstration(env: Any, agent: str) -> str:
    """The oracle planner's placements, as the tool's program or as the planner's answer."""
    return _oracle_demonstration(env, agent, width=64)


PRESETS: dict[str, Preset] = {
    # plan_path-v1 differs from v0 in when a plan reaches the goal only (it must end there), v2 from v1 in how the
    # tool's plan term is paid only: the prompts and demonstrations are the same.
    **{env_id: Preset(prompt=plan_path_prompt, demonstration=plan_path_demonstration,
                      env_kwargs={"size": 4, "max_turns": 3}, max_tokens=48)
       for env_id in ("plan_path-v0", "plan_path-v1", "plan_path-v2")},
    # max_tokens: room for the longest demonstration over training tasks 0-19,999 and its end-of-sequence token,
    # and a little more. plan_path: 10 moves, 46 tokens (the tool's program is 25 + 2 x moves characters); 48 fit
    # 11 moves (until 2026-12-05 it was 40, which cut every tool program of 8 moves or more: 3% of the held-out
    # tasks). sokoban: 10 moves, 46 tokens; 52 fit 13 moves. sudoku: 6 placements (every easy puzzle has at most 6
    # empty cells), 73 tokens; 81 fit 7 (under sudoku-v0, a wrong digit and its correction; sudoku-v1 reads no
    # more placements than empty cells).
    # sokoban-v1 and v2 differ from v0 in their rewards only (v1's progress: the share of a shortest solution done;
    # v2: the tool's plan term).
    **{env_id: Preset(prompt=sokoban_prompt, demonstration=sokoban_demonstration,
                      env_kwargs={"size": 5, "num_boxes": 1, "max_turns": 3}, max_tokens=52)
       for env_id in ("sokoban-v0", "sokoban-v1", "sokoban-v2")},
    # sudoku-v1: an answer holds no more placements than empty cells and must leave the puzzle solved (the oracle's
    # does).
    **{env_id: Preset(prompt=sudoku_prompt, demonstration=sudoku_demonstration,
                      env_kwargs={"size": 4, "difficulty": "easy", "max_turns": 3}, max_tokens=81)
       for env_id in ("sudoku-v0", "sudoku-v1")},
    # The learning sanity envs: their own prompts are already a few characters; answers are one character.
    **{env_id: Preset(max_tokens=2) for env_id in ("sanity_bandit-v0", "sanity_relay-v0", "sanity_two_turn-v0")},
}


#: ``prompt_format="compact_feedback"``: the compact prompts plus what the env's own prompts also say from the
#: second turn on (the turn, and how many of the planner's last moves applied and were invalid), and a random first
#: turn for ``sft_perturb``'s demonstrations of later turns. Without the line, a plan whose moves are all invalid
#: leaves the prompt as it was and greedy decoding answers it again (``benchmarks/failure_breakdown.py``).
FEEDBACK_PRESETS: dict[str, Preset] = {
    env_id: replace(PRESETS[env_id], prompt=plan_path_feedback_prompt, perturbation=plan_path_perturbation)
    for env_id in ("plan_path-v0", "plan_path-v1", "plan_path-v2")
}


def get_preset(env_id: str, prompt_format: str) -> Preset:
    """The preset of ``env_id`` for ``prompt_format`` (``"compact"`` when one exists, else the env's prompts;
    ``"compact_feedback"`` for the envs of :data:`FEEDBACK_PRESETS` only)."""
    if prompt_format == "compact_feedback":
        if env_id not in FEEDBACK_PRESETS:
            raise InvalidArgumentError(
                f"prompt_format='compact_feedback' with env_id={env_id!r}: only {sorted(FEEDBACK_PRESETS)} have it; "
                "use prompt_format='compact'")
        return FEEDBACK_PRESETS[env_id]
    if prompt_format == "compact" and env_id in PRESETS:
        return PRESETS[env_id]
    return Preset()
