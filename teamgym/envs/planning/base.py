"""``PlanningEnv``: the tool + planner protocol shared by ``plan_path``, ``sudoku`` and ``sokoban``.

Each turn the ``tool`` acts first, then the ``planner`` (AT-GRPO's planning setup, Stronger-MAS, arXiv
2510.11062):

1. **tool**: its completion's last ```` ```python ```` block runs in :mod:`teamgym.sandbox` after a preamble
   that defines the *current* state as Python variables (a copy: nothing the program does touches the env).
   Its stdout is kept for the planner, and the plan it prints (``Actions: ...``, see :mod:`.parsing`) is
   simulated on a copy of the state to score the tool. The env's state does not change.
2. **planner**: sees the task, the current state, the tool's program and its output, and answers with a plan.
   Its moves are applied to the real state in order; an invalid move is skipped (the state is unchanged by it)
   and penalised; a move that changes nothing is neither counted nor penalised; moves after the goal is
   reached are ignored (unless the family's ``stops_at_goal`` is off: then every move applies and a plan reaches the
   goal only by ending on it). The episode ends when the goal is reached, or after ``max_turns`` turns.

Rewards (every agent's reward is ``alpha * team + local``):

====================  ===========  =======================================================================
term                  range        meaning
====================  ===========  =======================================================================
team (planner step)   <= 2.5       ``progress`` gain of the turn + ``GOAL_BONUS`` (1.0) when the goal is
                                   reached + ``OPTIMAL_BONUS`` (0.5) when it is reached in the optimal number
                                   of moves. Both agents receive it (the tool's arrives on the planner's
                                   step); over an episode it sums to at most 2.5 (``MAX_TEAM_RETURN``).
team (tool step)      0            the tool's step does not change the env
tool ``format``       {-0.5, 0}    -0.5: no code block (nothing is run)
tool ``exec``         {-0.5,       -0.5: the program failed (error, timeout, memory, output limit, killed);
                      -0.25, 0}    -0.25: it ran but printed no readable plan
tool ``plan``         [0, 1]       its printed plan (read from stdout even if the program failed later)
                                   simulated on a copy of the state: worth 1.0 if it reaches the goal, else
                                   0.5 * the progress it would gain (>= 0). ``tool_plan="best"`` (the
                                   newest versions) caps a plan short of the goal at 0.5 and pays what a
                                   plan is worth beyond the best plan the tool printed earlier in the
                                   episode, so the terms of an episode add up to its best plan's worth (at
                                   most 1); ``"every_turn"`` (plan_path-v0/v1, sokoban-v0/v1, sudoku-v0)
                                   pays its whole worth every turn, which a team can farm by stalling or by
                                   splitting a plan over turns (and on plan_path a plan short of the goal
                                   is worth more than 1 from a board further than about twice the start's
                                   distance from the goal)
tool ``invalid``      [-1, 0]      -0.1 per invalid move in its printed plan (at most -1)
planner ``format``    {-0.5, 0}    -0.5: no readable plan (nothing is applied)
planner ``invalid``   [-1, 0]      -0.1 per invalid move applied (at most -1)
====================  ===========  =======================================================================

``progress`` is at most 1: 0 at the start and 1 exactly at the goal (each family defines it; plan_path's falls below
0 further from the goal than the start), so the team's progress terms add up to the progress made. ``infos[agent]``
carries, after every step: ``progress``, ``moves_used``, ``invalid_moves``, ``optimal_length``, ``team_parts``
(``progress``, ``goal``, ``optimal``), ``state_key`` (the role and the board it acts on, for GiGPO's anchors) and the
family's process signals; after a tool step also ``tool_status`` and ``tool_plan`` (``moves``, ``invalid``,
``reaches_goal``; ``moves`` is -1 when no plan was readable).

A sandbox infrastructure failure gives the tool zero terms and sets ``infos[agent]["infra_error"]``.

**Why ``tool_plan="best"``.** Paid every turn, the tool's ``plan`` term rewards episodes that last: a planner that
answers ``Actions:`` with no move leaves the board as it was, the tool prints the same winning plan again and is
paid 1.0 again (plan_path, four stalled turns then the goal: tool 7.5 and planner 2.5 against 3.5 and 2.5 for the
goal at once), which every estimator that scores the sum of the agents' rewards (``grpo``, ``rloo``, ``dr_mas``,
``gigpo``...) learns; and a tool that prints part of a plan each turn is paid 0.5 * each part and 1.0 for the last,
more than for the whole plan at once, which even per-agent estimators learn. With ``"best"`` neither pays.

Use the AEC env (``teamgym.make``) for AT-GRPO's sequential turns. Under ``teamgym.make_parallel`` both agents
decide from the observation they had at the start of the turn: the planner sees the previous turn's program.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic

import numpy as np

from teamgym import sandbox
from teamgym.core import Outcome, Policy, TurnBasedTextEnv, TurnRecord, reward_terms, select_code_block
from teamgym.envs.planning import prompts
from teamgym.envs.planning.hooks import BoardT, FamilyHooks, MoveT, TaskT
from teamgym.errors import InvalidArgumentError, SandboxError

__all__ = [
    "PlanningEnv",
    "PlanningState",
    "PlanRun",
    "GOAL_BONUS",
    "OPTIMAL_BONUS",
    "MAX_TEAM_RETURN",
    "INVALID_PENALTY",
    "FORMAT_PENALTY",
    "EXEC_FAILED",
    "NO_PLAN",
    "check_task_id",
]


GOAL_BONUS = 1.0
OPTIMAL_BONUS = 0.5
#: The most team reward an episode can earn: all the progress, the goal bonus and the optimality bonus.
MAX_TEAM_RETURN = 1.0 + GOAL_BONUS + OPTIMAL_BONUS
INVALID_PENALTY = 0.1
FORMAT_PENALTY = 0.5
EXEC_FAILED = 0.5
NO_PLAN = 0.25
#: Memory limit of the tool's program (MiB).
TOOL_MEMORY_MB = 512
#: How the tool's ``plan`` term may be paid (``PlanningEnv(tool_plan=...)``).
TOOL_PLAN_PAYMENTS = ("best", "every_turn")


@dataclass
class PlanningState(Generic[BoardT]):
    """The mutable episode state: the board (an immutable value, replaced by each move), the team's record."""

    board: BoardT
    moves_used: int = 0
    invalid_moves: int = 0
    solved: bool = False
    optimal: bool = False
    tool_code: str = ""
    tool_status: str = "not run"
    tool_output: str = ""
    #: what the planner's last answer did: (moves applied, invalid moves), ``NO_PLAN_READ`` when no plan was
    #: readable, None before its first answer. The prompts' line about it (:attr:`last_turn`) derives from it.
    last_plan: tuple[int, int] | str | None = None
    #: the most a plan the tool printed was worth this episode (``tool_plan="best"`` pays only beyond it)
    tool_plan_best: float = 0.0
    frames: dict[tuple[int, str], str] = field(default_factory=dict)

    @property
    def last_turn(self) -> str:
        """The prompts' line about the planner's last answer (empty before its first)."""
        if self.last_plan is None:
            return ""
        return f"Last turn the planner answered: {_answered(self.last_plan)}.\n\n"


#: ``PlanningState.last_plan`` after an answer with no readable plan.
NO_PLAN_READ = "no readable plan"


def _answered(last_plan: tuple[int, int] | str) -> str:
    return last_plan if isinstance(last_plan, str) else f"{last_plan[0]} moves applied, {last_plan[1]} invalid"


@dataclass(frozen=True)
class PlanRun(Generic[BoardT]):
    """A plan played from a board: where it ends, the moves that counted, invalid moves, goal reached."""

    board: BoardT
    valid: int
    invalid: int
    reaches_goal: bool


def check_task_id(task_id: Any) -> int:
    """``task_id`` as a seed for ``numpy.random.default_rng``; procedural envs accept any int >= 0."""
    if isinstance(task_id, bool) or not isinstance(task_id, (int, np.integer)) or task_id < 0:
        raise InvalidArgumentError(f"task_id={task_id!r}: expected an int >= 0 (the seed the task is generated from)")
    return int(task_id)


class PlanningEnv(TurnBasedTextEnv[TaskT, "PlanningState[BoardT]"], FamilyHooks[TaskT, BoardT, MoveT]):
    """Tool + planner envs; a family fills in its board, moves, progress and prompts (:class:`FamilyHooks`).

    Args:
        max_turns: turns (tool then planner) before truncation.
        alpha: weight of the team term (AT-GRPO: 1.0).
        render_mode: ``None``, ``"ansi"`` or ``"human"``.
        tool_timeout: seconds the tool's program may run in the sandbox.
        max_cycles: PettingZoo's name for ``max_turns`` (one cycle = tool then planner); when given, it sets it.
        tool_plan: how the tool's ``plan`` term is paid: ``"best"`` (beyond the best plan it printed earlier in
            the episode) or ``"every_turn"`` (its whole worth each turn: the earlier versions; see the module
            docstring).
    """

    roles: ClassVar[tuple[str, ...]] = ("tool", "planner")
    #: A plan stops as soon as it reaches the goal (later moves ignored); off, every move applies and the plan
    #: reaches the goal only if it ends there (a family sets it per instance, e.g. ``plan_path``'s v1).
    stops_at_goal: bool = True

    def __init__(
        self,
        *,
        max_turns: int,
        alpha: float | dict[str, float] = 1.0,
        render_mode: str | None = None,
        tool_timeout: float = 1.0,
        max_cycles: int | None = None,
        tool_plan: str = "every_turn",
    ):
        super().__init__(
            max_turns=max_turns,
            max_cycles=max_cycles,
            alpha=alpha,
            render_mode=render_mode,
            max_prompt_chars=32_768,
            max_action_chars=65_536,
        )
        if (
            isinstance(tool_timeout, bool)
            or not isinstance(tool_timeout, (int, float))
            or not (math.isfinite(tool_timeout) and 0 < tool_timeout <= 60)
        ):
            raise InvalidArgumentError(f"tool_timeout={tool_timeout!r}: expected seconds in (0, 60], e.g. 5.0")
        self.tool_timeout = float(tool_timeout)
        if tool_plan not in TOOL_PLAN_PAYMENTS:
            raise InvalidArgumentError(
                f"tool_plan={tool_plan!r}: expected 'best' (the tool is paid for a plan beyond the best it printed "
                "earlier in the episode) or 'every_turn' (each plan's whole worth, every turn: the earlier versions)"
            )
        self.tool_plan = tool_plan
        self._prompt_memo: dict[str, tuple[tuple[Any, ...], str]] = {}  # role -> (prompt inputs, prompt)

    # ------------------------------------------------------------------ TurnBasedTextEnv hooks
    def _initial_state(self, task: TaskT) -> PlanningState[BoardT]:
        return PlanningState(board=self._initial_board(task))

    def _system_prompt(self, agent: str) -> str:
        return prompts.TOOL_SYSTEM if agent == "tool" else prompts.PLANNER_SYSTEM

    def _shown(self, board: BoardT) -> str:
        """``_show(board)``, remembered for the last board of this task: every agent's prompt shows the same board
        after a step, and tree sampling restores the same node board K times."""
        memo = getattr(self, "_shown_memo", None)
        if memo is not None and memo[0] is self.task and memo[1] == board:
            return memo[2]
        text = self._show(board)
        self._shown_memo = (self.task, board, text)  # boards are immutable values (tuples, frozen dataclasses)
        return text

    def _user_prompt(self, agent: str) -> str:
        """The role's prompt, remembered per role for the last inputs it was rendered from (the task, the board,
        the tool's last run, the turn): after most steps, and across the K restores of a tree node, they repeat."""
        state = self.state
        turn = min(self.turn, self.max_turns - 1)
        key: tuple[Any, ...] = (self.task, state.board, turn, state.last_plan)  # last_plan: what last_turn says
        if agent != "tool":
            key += (state.tool_code, state.tool_status, state.tool_output)
        last = self._prompt_memo.get(agent)
        if last is not None and last[0] == key:
            return last[1]
        text = self._render_user_prompt(agent, state, turn)
        self._prompt_memo[agent] = (key, text)
        return text

    def _render_user_prompt(self, agent: str, state: PlanningState[BoardT], turn: int) -> str:
        if agent == "tool":
            return prompts.tool_prompt(
                rules=self._rules(),
                state=self._shown(state.board),
                preamble=self._preamble(state.board),
                plan_format=self.plan_format,
                turn=turn,
                max_turns=self.max_turns,
                last_turn=state.last_turn,
            )
        return prompts.planner_prompt(
            rules=self._rules(),
            state=self._shown(state.board),
            code=state.tool_code,
            status=state.tool_status,
            output=state.tool_output,
            plan_format=self.plan_format,
            turn=turn,
            max_turns=self.max_turns,
            last_turn=state.last_turn,
        )

    def _state_key(self, agent: str) -> str:
        """The acting role and the board (as the prompts show it): the state the agent acts on. The turn counter,
        last turn's feedback and the tool's program and output are left out: they are the episode's history and a
        teammate's message, not the board, and with them no two planner prompts would ever share an anchor."""
        return f"{agent}\n{self._shown(self.state.board)}"

    def _apply_action(self, agent: str, action: str) -> Outcome:
        return self._tool_step(action) if agent == "tool" else self._planner_step(action)

    def _is_success(self) -> bool:
        return self.state.solved

    def _episode_extras(self) -> dict[str, Any]:
        return {
            "optimal": self.state.optimal,
            "optimal_length": self._optimal_length(),
            "moves_used": self.state.moves_used,
            "invalid_moves": self.state.invalid_moves,
            "progress": self._progress(self.state.board),
        }

    def _scripted_policies(self) -> dict[str, dict[str, Callable[[], Policy]]]:
        return {
            "tool": {"oracle": lambda: self._oracle_tool, "random": lambda: self._random_tool},
            "planner": {
                "oracle": lambda: self._oracle_planner,
                "copy_tool": lambda: self._copy_tool_planner,
                "random": lambda: self._random_planner,
            },
        }

    # ------------------------------------------------------------------ the two steps
    def _run_plan(self, board: BoardT, plan: Sequence[MoveT]) -> PlanRun[BoardT]:
        valid = invalid = 0
        for move in plan:
            if self.stops_at_goal and self._solved(board):
                break
            after = self._move(board, move)
            if after is None:
                invalid += 1
            elif after != board:
                board = after
                valid += 1
        return PlanRun(board, valid, invalid, self._solved(board))

    def _tool_step(self, action: str) -> Outcome:
        state = self.state
        block = select_code_block(action)
        plan: list[MoveT] | None = None
        parts = {"format": 0.0, "exec": 0.0, "plan": 0.0, "invalid": 0.0}
        if block is None or not block.code.strip():
            parts["format"] = -FORMAT_PENALTY
            state.tool_code, state.tool_status, state.tool_output = "", "no code", ""
        else:
            result = self._run_program(self._preamble(state.board) + block.code)
            state.tool_code, state.tool_status = block.code, result.status
            state.tool_output = result.stdout if result.status == "ok" else _with_error(result.stdout, result.stderr)
            if result.infra_error:
                state.tool_status = "sandbox failure"
                self._frame("tool", f"[tool] sandbox failure: {result.infra_error}")
                return Outcome(
                    {"tool": reward_terms(team=0.0)},
                    infra_error=str(result.infra_error),
                    info=self._infos(tool_status=state.tool_status),
                )
            plan = self._parse_plan(result.stdout)
            if result.status != "ok":
                parts["exec"] = -EXEC_FAILED
            elif plan is None:
                parts["exec"] = -NO_PLAN
        run = self._run_plan(state.board, plan) if plan is not None else None
        if run is not None:
            gain = self._progress(run.board) - self._progress(state.board)
            worth = 1.0 if run.reaches_goal else 0.5 * max(0.0, gain)
            if self.tool_plan == "best":
                # A plan short of the goal is worth at most 0.5: plan_path's progress goes below 0 away from the
                # goal, so from far enough its gain could pass 2, and the plan be worth more than reaching the goal.
                worth = 1.0 if run.reaches_goal else min(0.5, worth)
                parts["plan"] = max(0.0, worth - state.tool_plan_best)
                state.tool_plan_best = max(state.tool_plan_best, worth)
            else:
                parts["plan"] = worth
            parts["invalid"] = -min(1.0, INVALID_PENALTY * run.invalid)
        summary = {
            "moves": -1 if plan is None else len(plan),
            "invalid": run.invalid if run else 0,
            "reaches_goal": bool(run and run.reaches_goal),
        }
        self._frame(
            "tool",
            f"[tool] program status: {state.tool_status}; printed plan: "
            + (
                "none readable"
                if plan is None
                else f"{len(plan)} moves, {summary['invalid']} invalid, "
                f"{'reaches' if summary['reaches_goal'] else 'does not reach'} the goal"
            ),
        )
        return Outcome(
            {"tool": reward_terms(team=0.0, **parts)},
            info=self._infos(tool_status=state.tool_status, tool_plan=summary),
        )

    def _programs(self, agent: str, action: str) -> list[sandbox.Program]:
        if agent != "tool":
            return []
        block = select_code_block(action)
        if block is None or not block.code.strip():
            return []
        return [sandbox.Program.of(self._preamble(self.state.board) + block.code, timeout=self.tool_timeout,
                                   memory_mb=TOOL_MEMORY_MB)]

    def _run_program(self, program: str) -> sandbox.ExecResult:
        try:
            return sandbox.run_python(program, timeout=self.tool_timeout, memory_mb=TOOL_MEMORY_MB)
        except SandboxError as err:  # the sandbox itself failed: not the tool's fault
            return sandbox.ExecResult(status="error", infra_error=str(err))

    def _planner_step(self, action: str) -> Outcome:
        state = self.state
        plan = self._parse_plan(action)
        before = self._progress(state.board)
        run = self._run_plan(state.board, plan or [])
        state.board = run.board
        state.moves_used += run.valid
        state.invalid_moves += run.invalid
        solved_now = run.reaches_goal and not state.solved
        state.solved = state.solved or run.reaches_goal
        optimal_now = solved_now and state.moves_used == self._optimal_length()
        state.optimal = state.optimal or optimal_now
        team_parts = {
            "progress": self._progress(state.board) - before,
            "goal": GOAL_BONUS * solved_now,
            "optimal": OPTIMAL_BONUS * optimal_now,
        }
        team = math.fsum(team_parts.values())
        format_part = -FORMAT_PENALTY if plan is None else 0.0
        invalid_part = -min(1.0, INVALID_PENALTY * run.invalid)
        state.last_plan = NO_PLAN_READ if plan is None else (run.valid, run.invalid)
        done = _answered(state.last_plan)
        status = " GOAL REACHED" + (" (optimal)" if optimal_now else "") if solved_now else ""
        self._frame("planner", f"[planner] {done}.{status}\n{self._shown(state.board)}")
        return Outcome(
            {
                "tool": reward_terms(team=team),
                "planner": reward_terms(team=team, format=format_part, invalid=invalid_part),
            },
            terminated=state.solved,
            info=self._infos(team_parts=team_parts),
        )

    def _info_defaults(self, agent: str) -> dict[str, Any]:
        return self._infos(
            team_parts={"progress": 0.0, "goal": 0.0, "optimal": 0.0},
            tool_status=self.state.tool_status,
            tool_plan={"moves": -1, "invalid": 0, "reaches_goal": False},
        )[agent]

    def _infos(self, **extra: Any) -> dict[str, dict[str, Any]]:
        state = self.state
        shared = {
            "progress": self._progress(state.board),
            "moves_used": state.moves_used,
            "invalid_moves": state.invalid_moves,
            "optimal_length": self._optimal_length(),
            **self._signals(state.board),
            **extra,
        }
        return {a: dict(shared) for a in self.possible_agents}

    # ------------------------------------------------------------------ rendering
    def _frame(self, agent: str, text: str) -> None:
        self.state.frames[(self.turn, agent)] = text

    def _render_header(self) -> str:
        return (
            f"{super()._render_header()}\noptimal plan: {self._optimal_length()} moves\n"
            f"{self._show(self._initial_board(self.task))}"
        )

    def _render_record(self, record: TurnRecord) -> str:
        frame = self.state.frames.get((record.turn, record.agent), "")
        return f"{super()._render_record(record)}\n{frame}"

    # ------------------------------------------------------------------ scripted policies
    def _oracle_tool(self, observation: Any) -> str:
        return f"A search from the current state prints a shortest plan.\n```python\n{self.oracle_program}```"

    def _random_tool(self, observation: Any) -> str:
        plan = self._format_plan(self._random_plan(_policy_rng(observation), self.state.board))
        return f"```python\nprint({plan!r})\n```"

    def _oracle_planner(self, observation: Any) -> str:
        return f"I solve it myself.\n{self._format_plan(self._solve(self.state.board))}"

    def _copy_tool_planner(self, observation: Any) -> str:
        plan = self._parse_plan(self.state.tool_output) or []
        return f"I adopt the tool agent's plan.\n{self._format_plan(plan)}"

    def _random_planner(self, observation: Any) -> str:
        return self._format_plan(self._random_plan(_policy_rng(observation), self.state.board))


def _with_error(stdout: str, stderr: str) -> str:
    """What a failed program shows: its stdout, then the tail of its stderr (the traceback's last lines)."""
    tail = "\n".join(stderr.strip().splitlines()[-5:])
    return f"{stdout}\n[stderr]\n{tail}" if tail else stdout


def _policy_rng(observation: Any) -> np.random.Generator:
    """An RNG seeded by the observation, so that random policies are reproducible without a global RNG."""
    prompt = observation["prompt"] if isinstance(observation, dict) else str(observation)
    return np.random.default_rng(zlib.crc32(prompt.encode("utf-8", "replace")))
