"""Learning sanity envs: ``sanity_bandit-v0``, ``sanity_relay-v0`` and ``sanity_two_turn-v0``, tiny known-answer tasks.

Every RL library keeps envs like these (Stable-Baselines3's identity envs, CleanRL's ``CartPole`` smoke runs): an
algorithm, a trainer or a sampler that is broken in any of the usual ways (a flipped sign, a logprob shifted by one
token, advantages grouped wrongly, a sampler that never receives the new weights) fails to learn them. Every registered
estimator learns the bandit from random init within 300 steps, and the other two within 600 (docs/training.md has the
table).
``tests/train/test_sanity.py`` trains every registered estimator on them.

**Task.** Each task is a *cue*, one character of ``cues`` (default ``"abcd"``): task id ``i`` has cue
``cues[i % len(cues)]``. Any int >= 0 is a task; no data. The answer the envs reward is always the cue itself: an
agent answers by writing the cue as the **first character** of its completion (the rest is ignored; an empty or
whitespace-only completion answers nothing and earns 0, the same as a wrong character).

**The three envs.**

====================  ===================  ==================================================================
id                    agents (turns)       what the team must learn
====================  ===================  ==================================================================
``sanity_bandit-v0``         player (1)           a one-turn contextual bandit: the prompt ``a>`` shows the cue,
                                           the rewarded arm is that character
``sanity_relay-v0``          speaker, listener    the speaker sees the cue (``a>``) and says a character; the
                      (1)                  listener sees only what was said (``heard a>``) and must repeat
                                           the cue: the team succeeds when the token it repeats is the cue
``sanity_two_turn-v0``       player (2)           turn 0 (``a?``) earns nothing whatever the answer; turn 1
                                           (``a!``) earns 1 for the cue: only the second turn's reward
                                           is informative
====================  ===================  ==================================================================

**Rewards.**

==================  ========  ==========================================================================
term                range     meaning
==================  ========  ==========================================================================
team                {0, 1}    bandit: the player answered the cue; relay: on the listener's step, to
                              both agents, the listener repeated the cue; two_turn: on turn 1, the
                              player answered the cue (0 on turn 0, whatever it wrote)
speaker ``said``    {0, 1}    relay only, on the speaker's step: its message starts with the cue (the
                              speaker's own signal, as a tool's printed plan earns ``plan`` in
                              ``plan_path-v0``)
==================  ========  ==========================================================================

Success: the team term of the episode is 1. The maximum team return is 1.

**Spaces.** Observation ``Dict(prompt=TextSpace(64), turn=Discrete(max_turns + 1))``; action ``TextSpace(64)``
(longer completions are clipped and flagged, as in every env).

**Options.** ``cues`` (2 to 16 distinct printable, non-space characters; default ``"abcd"``), ``alpha``,
``render_mode``.

**Scripted policies.** Every agent: ``oracle`` (answers the cue it sees: the speaker and the player their cue, the
listener what it heard) and ``random`` (a random cue, drawn with the env's RNG).

**Version history.** v0: first release.

>>> import teamgym
>>> env = teamgym.make("sanity_relay-v0")
>>> env.reset(seed=0, options={"task_id": 1})
>>> env.observe("speaker")["prompt"]
'b>'
>>> env.step("b")
>>> env.observe("listener")["prompt"]
'heard b>'
"""

from __future__ import annotations

import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from teamgym.core import Outcome, Policy, TurnBasedTextEnv, reward_terms
from teamgym.errors import InvalidArgumentError

__all__ = ["BanditEnv", "RelayEnv", "SanityState", "TwoTurnEnv"]


@dataclass
class SanityState:
    """What was said so far (the relay's message) and whether the team answered the cue."""

    heard: str = ""
    solved: bool = False


def first_char(text: str) -> str:
    """The first non-whitespace character of ``text``, or ``""``."""
    stripped = text.lstrip()
    return stripped[:1]


class _SanityEnv(TurnBasedTextEnv[str, SanityState]):
    """The shared machinery: the cue of a task, the prompts' size, the oracle and random policies."""

    turns: ClassVar[int] = 1

    def __init__(self, *, cues: str = "abcd", alpha: float | Mapping[str, float] = 1.0,
                 render_mode: str | None = None, max_cycles: int | None = None):
        allowed = set(string.printable) - set(string.whitespace)
        if (not isinstance(cues, str) or not 2 <= len(cues) <= 16 or len(set(cues)) != len(cues)
                or not set(cues) <= allowed):
            raise InvalidArgumentError(
                f"cues={cues!r}: expected 2 to 16 distinct printable non-space characters, e.g. 'abcd'"
            )
        # The episode's length is what the env tests, so max_cycles can shorten it but never lengthen it.
        if max_cycles is not None and (isinstance(max_cycles, bool) or not isinstance(max_cycles, int)
                                       or max_cycles < 1):
            raise InvalidArgumentError(f"max_cycles={max_cycles!r}: expected an int >= 1")
        turns = self.turns if max_cycles is None else min(self.turns, max_cycles)
        super().__init__(max_turns=turns, alpha=alpha, render_mode=render_mode, max_prompt_chars=64,
                         max_action_chars=64)
        self.cues = cues

    def task_ids(self) -> None:
        return None  # procedural: any int >= 0

    def _task_from_id(self, task_id: Any) -> str:
        if isinstance(task_id, bool) or not isinstance(task_id, int) or task_id < 0:
            raise InvalidArgumentError(f"task_id={task_id!r}: expected an int >= 0 (its cue is cues[id % len(cues)])")
        return self.cues[task_id % len(self.cues)]

    def _initial_state(self, task: str) -> SanityState:
        return SanityState()

    def _system_prompt(self, agent: str) -> str:
        return ""

    def _state_key(self, agent: str) -> str:
        return f"{agent}:{self.turn}:{self._user_prompt(agent)}"

    def _info_defaults(self, agent: str) -> dict[str, Any]:
        return {"answer": ""}  # the first character of the agent's last completion

    def _is_success(self) -> bool:
        return self.state.solved

    def _episode_extras(self) -> dict[str, Any]:
        return {"cue": self.task}

    def _scripted_policies(self) -> dict[str, dict[str, Callable[[], Policy]]]:
        def oracle(observation: Mapping[str, Any]) -> str:
            prompt = observation["prompt"]
            return prompt[len("heard "):][:1] if prompt.startswith("heard ") else prompt[:1]

        def random(observation: Mapping[str, Any]) -> str:
            return self.cues[int(self.np_random.integers(len(self.cues)))]

        return {agent: {"oracle": lambda: oracle, "random": lambda: random} for agent in self.possible_agents}


class BanditEnv(_SanityEnv):
    """``sanity_bandit-v0``: one player, one turn; the rewarded arm is the cue shown in the prompt."""

    metadata = {"name": "sanity_bandit-v0", "render_modes": ["ansi", "human"], "is_parallelizable": True}
    roles = ("player",)

    def _user_prompt(self, agent: str) -> str:
        return f"{self.task}>"

    def _apply_action(self, agent: str, action: str) -> Outcome:
        self.state.solved = first_char(action) == self.task
        return Outcome({agent: reward_terms(team=float(self.state.solved))}, terminated=True,
                       info={agent: {"answer": first_char(action)}})


class RelayEnv(_SanityEnv):
    """``sanity_relay-v0``: the speaker sees the cue, the listener only hears the speaker and must repeat the cue."""

    metadata = {"name": "sanity_relay-v0", "render_modes": ["ansi", "human"], "is_parallelizable": True}
    roles = ("speaker", "listener")

    def _user_prompt(self, agent: str) -> str:
        if agent == "speaker":
            return f"{self.task}>"
        return f"heard {self.state.heard}>"

    def _apply_action(self, agent: str, action: str) -> Outcome:
        said = first_char(action)
        if agent == "speaker":
            self.state.heard = said
            return Outcome({agent: reward_terms(said=float(said == self.task))}, info={agent: {"answer": said}})
        self.state.solved = said == self.task
        team = float(self.state.solved)
        return Outcome({a: reward_terms(team=team) for a in self.possible_agents}, terminated=True,
                       info={agent: {"answer": said}})


class TwoTurnEnv(_SanityEnv):
    """``sanity_two_turn-v0``: one player, two turns; turn 0 earns nothing, turn 1 earns 1 for the cue."""

    metadata = {"name": "sanity_two_turn-v0", "render_modes": ["ansi", "human"], "is_parallelizable": True}
    roles = ("player",)
    turns = 2

    def _user_prompt(self, agent: str) -> str:
        return f"{self.task}{'?' if self.turn == 0 else '!'}"

    def _apply_action(self, agent: str, action: str) -> Outcome:
        said = first_char(action)
        if self.turn == 0:
            return Outcome({agent: reward_terms(team=0.0)}, info={agent: {"answer": said}})
        self.state.solved = said == self.task
        return Outcome({agent: reward_terms(team=float(self.state.solved))}, terminated=True,
                       info={agent: {"answer": said}})
