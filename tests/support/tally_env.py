"""``TallyEnv``: three agents add digits to reach a target sum, in an order the env chooses (a test env).

Agents ``alice``, ``bob``, ``carol``. Each action is parsed for its first digit (none: format penalty, adds
0). The agent to act is always the one whose index is ``total % 3`` (so an agent that adds 0 or 3 acts again),
and a turn holds three steps. Reaching the target exactly solves the task (every agent gets ``team = 1``);
overshooting fails it (every agent gets ``team = -1``). ``infos[agent]["progress"]`` is ``min(total / target,
1)`` for every agent after every step (the progress-signal convention of
``teamgym.wrappers.EnvProgressScorer``).

==========  =========  ========  =========================================================
term        range      weight    meaning
==========  =========  ========  =========================================================
team        {-1, 0, 1}  alpha    every agent: 1 on reaching the target, -1 on overshooting
format      {-0.5, 0}  1         acting agent: -0.5 when its action holds no digit
==========  =========  ========  =========================================================
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from teamgym.core import Outcome, TurnBasedTextEnv, reward_terms

_DIGIT = re.compile(r"[0-9]")


@dataclass
class TallyState:
    total: int = 0
    steps_in_turn: int = 0


class TallyEnv(TurnBasedTextEnv[int, TallyState]):
    """Three agents add digits to reach a target sum, in an env-chosen order."""

    metadata = {"name": "tally-v0", "render_modes": ["ansi", "human"], "is_parallelizable": True}
    roles = ("alice", "bob", "carol")

    def __init__(
        self, *, max_turns: int = 3, alpha: float | dict[str, float] = 1.0, render_mode: str | None = None
    ):
        super().__init__(
            max_turns=max_turns,
            alpha=alpha,
            render_mode=render_mode,
            max_prompt_chars=1024,
            max_action_chars=1024,
        )

    def _task_from_id(self, task_id: int) -> int:
        return 10 + int(task_id) % 20

    def _initial_state(self, task: int) -> TallyState:
        return TallyState()

    def _system_prompt(self, agent: str) -> str:
        return f"You are {agent}. Write one digit."

    def _user_prompt(self, agent: str) -> str:
        return f"Target {self.task}, total so far {self.state.total}."

    def _select_first(self) -> str:
        self.state.steps_in_turn = 0
        return self.agents[self.state.total % 3]

    def _select_next(self, agent: str) -> str | None:
        self.state.steps_in_turn += 1
        return None if self.state.steps_in_turn >= 3 else self.agents[self.state.total % 3]

    def _apply_action(self, agent: str, action: str) -> Outcome:
        match = _DIGIT.search(action)
        self.state.total += int(match.group()) if match else 0
        solved, failed = self.state.total == self.task, self.state.total > self.task
        team = 1.0 if solved else -1.0 if failed else 0.0
        terms = {a: reward_terms(team=team) for a in self.agents}
        terms[agent] = reward_terms(team=team, format=0.0 if match else -0.5)
        progress = min(self.state.total / self.task, 1.0)
        return Outcome(
            terms, terminated=solved or failed, info={a: {"progress": progress} for a in self.agents}
        )

    def _is_success(self) -> bool:
        return self.state.total == self.task

    def _scripted_policies(self):
        def oracle():
            return lambda obs: str(min(9, self.task - self.state.total))

        return {role: {"oracle": oracle} for role in self.roles}
