r"""``discussion-v0``: N symmetric agents answer a math problem, discuss for T rounds, and vote.

A multi-agent debate in the setting of MAPoRL (Park et al., 2025, "MAPoRL: Multi-Agent Post-Co-Training for
Collaborative Large Language Models with Reinforcement Learning", arXiv:2502.18439): the agents are rewarded for the
team's final answer and for their own correctness, with extra terms for being persuaded to the right answer, for
persuading others to it, and against being talked out of it.

Agents and rounds
    ``agent_0`` ... ``agent_{N-1}`` (``num_agents`` = N >= 2), all with the same prompts but for their names. Round 0:
    each agent answers the problem on its own. Rounds 1..T (``rounds`` = T): each agent sees the *previous* round's
    answers of all the others, with their replies clipped to ``rationale_chars`` (never the answers of the same round,
    so acting in order gives no agent an advantage), and answers again. An answer is the last ``\boxed{...}`` of a
    reply. One round is one turn; the episode terminates after round T.

Team answer and tie-breaking
    The team's answer is the plurality of the final round's answers, grouped by value (``1/2`` and ``0.5`` are one
    vote each for the same answer). Missing answers do not vote. If two or more answers tie for the most votes, the
    team has **no** answer and its team reward is 0 (symmetric: no agent's vote counts more).

Problems
    As ``math_tool-v0``: procedural (``difficulty``, ``families``) from the task id, or ``dataset="file.jsonl"``;
    checked by value with :func:`~teamgym.envs.math_tool.answers.is_equivalent`.

Spaces
    Observation: ``Dict({"prompt": TextSpace(max_prompt_chars), "turn": Discrete(rounds + 2)})``; action:
    ``TextSpace(max_action_chars)``.

Rewards (``rewards[agent] == alpha * team + local``; ``local`` is the sum of the agent's other terms)

    ===============  ===============================  =======================  ======================================
    term             range                            default weight           meaning
    ===============  ===============================  =======================  ======================================
    ``team``         {0, 1}                           ``alpha`` = 1            the final majority answer is correct;
                                                                               given to every agent in the last step
                                                                               of round T (0 in every other step)
    ``correct``      {0, 1}                           1                        the agent's answer this round is
                                                                               correct (every round)
    ``format``       {-format_penalty, 0}             ``format_penalty``       no ``\boxed{...}`` in the reply
                                                      = 0.5                    (v1: or an empty one)
    ``switch``       {-switch_weight, 0,              ``switch_weight`` = 0.5  rounds >= 1: + when the agent went
                     +switch_weight}                                           from wrong (or no answer) to right,
                                                                               - when it went from right to wrong
    ``persuasion``   [-(N-1) w, +(N-1) w],            ``persuasion_weight``    rounds >= 1, given to every agent in
                     w = ``persuasion_weight``        = 0.25                   the round's last step: for each other
                                                                               agent that went wrong -> right, the
                                                                               agents right in the previous round
                                                                               share +w; for each that went right ->
                                                                               wrong, the agents whose previous answer
                                                                               it adopted share -w
    ===============  ===============================  =======================  ======================================

    The oracle team earns the maximum team reward (1) and ``correct`` 1 in each of the T+1 rounds. The switch and
    persuasion terms reward changing minds towards the right answer, but with the default weights a team never
    gains by starting wrong to be persuaded later: the switcher loses 1 (``correct``) and gains 0.5 (``switch``),
    the persuaders share 0.25, so the sum of the agents' local returns drops by 0.25.

Infos (besides the base's)
    acting agent: ``answer``, ``correct``, ``switched`` (``"to_right"``, ``"to_wrong"`` or ``""``); every agent at the
    end of each round: ``round_answers``, ``round_majority``, ``round_majority_correct``; an answer that could not be
    read is ``None`` (``""`` in :class:`~teamgym.wrappers.SingleAgentView`'s infos, which carry every key from
    ``reset``). Episode summary:
    ``final_answer`` (the team's, or ``""`` when there is none: a tie, or the episode cut short),
    ``final_correct``, ``num_correct_final``, ``family``, ``difficulty``, ``answer`` (the reference).

Options (keyword-only)
    ``num_agents`` (3, >= 2), ``rounds`` (2, >= 0;
    or ``max_cycles`` = rounds + 1, PettingZoo's name), ``alpha`` (1.0 or a dict per agent), ``render_mode``,
    ``difficulty`` (``None`` or 1-3), ``families`` (``None`` or a subset), ``dataset`` (``None`` or a JSONL path),
    ``rationale_chars`` (400), ``format_penalty`` (0.5), ``switch_weight`` (0.5), ``persuasion_weight`` (0.25),
    ``max_prompt_chars`` (16384), ``max_action_chars`` (16384), ``strict_answers`` (``False``, v0; ``True``, v1:
    the strict checker, and an empty ``\boxed{}`` is no answer).

Scripted policies (for every agent)
    ``oracle`` (default; boxes the reference answer) and ``random`` (a random small integer, sometimes no box).

Version history
    v0: first version.
    v1: answers are checked with the strict checker (``strict_answers=True``; :mod:`teamgym.envs.math_tool.answers`
    lists what it fixes: ``033`` read as 0, ``768 or more`` as 768, ``b - a`` as 1...), and an empty ``\boxed{}``
    earns the format penalty (in v0 it cost nothing). Rewards are otherwise v0's.

>>> import teamgym
>>> env = teamgym.make("discussion-v0", num_agents=2, rounds=1)
>>> env.reset(seed=0)
>>> env.agents
['agent_0', 'agent_1']
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from teamgym.core import Outcome, Policy, TurnBasedTextEnv, TurnRecord, clip_text, reward_terms
from teamgym.core.rewards import RewardTerms, add_terms
from teamgym.envs.discussion.prompts import system_prompt, user_prompt
from teamgym.envs.discussion.rewards import majority_answer, persuasion_credit
from teamgym.envs.math_tool.answers import boxed_answer, is_equivalent
from teamgym.envs.math_tool.problems import MathProblem
from teamgym.envs.math_tool.source import ProblemSource
from teamgym.errors import InvalidArgumentError

__all__ = ["DiscussionEnv", "DiscussionState"]


@dataclass
class DiscussionState:
    """The mutable episode state: one dict per round, filled in as the agents act."""

    answers: list[dict[str, str | None]] = field(default_factory=list)
    replies: list[dict[str, str]] = field(default_factory=list)
    correct: list[dict[str, bool]] = field(default_factory=list)
    majority: list[str | None] = field(default_factory=list)


class DiscussionEnv(TurnBasedTextEnv[MathProblem, DiscussionState]):
    """N symmetric agents answer a math problem, discuss for T rounds, and the majority answer counts."""

    metadata = {"name": "discussion-v0", "render_modes": ["ansi", "human"], "is_parallelizable": True}

    def __init__(
        self,
        *,
        num_agents: int = 3,
        rounds: int = 2,
        alpha: float | Mapping[str, float] = 1.0,
        render_mode: str | None = None,
        difficulty: int | None = None,
        families: Sequence[str] | None = None,
        dataset: str | None = None,
        rationale_chars: int = 400,
        format_penalty: float = 0.5,
        switch_weight: float = 0.5,
        persuasion_weight: float = 0.25,
        max_prompt_chars: int = 16_384,
        max_action_chars: int = 16_384,
        max_cycles: int | None = None,
        strict_answers: bool = False,
    ):
        if not isinstance(strict_answers, bool):
            raise InvalidArgumentError(f"strict_answers={strict_answers!r}: expected True (discussion-v1) or False")
        self.strict_answers = strict_answers
        self.metadata = {**self.metadata, "name": "discussion-v1" if strict_answers else "discussion-v0"}
        if max_cycles is not None:  # a cycle is a round, and round 0 (the first answers) is one
            if isinstance(max_cycles, bool) or not isinstance(max_cycles, int) or max_cycles < 1:
                raise InvalidArgumentError(f"max_cycles={max_cycles!r}: expected an int >= 1 (rounds = max_cycles - 1)")
            rounds = max_cycles - 1
        for name, value, minimum in (("num_agents", num_agents, 2), ("rounds", rounds, 0),
                                     ("rationale_chars", rationale_chars, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
                raise InvalidArgumentError(f"{name}={value!r}: expected an int >= {minimum}")
        for name, value in (("format_penalty", format_penalty), ("switch_weight", switch_weight),
                            ("persuasion_weight", persuasion_weight)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
                raise InvalidArgumentError(f"{name}={value!r}: expected a finite float >= 0 (0 turns the term off)")
        super().__init__(max_turns=rounds + 1, alpha=alpha, render_mode=render_mode,
                         max_prompt_chars=max_prompt_chars, max_action_chars=max_action_chars,
                         agents=[f"agent_{i}" for i in range(num_agents)])
        self.source = ProblemSource(difficulty=difficulty, families=families, dataset=dataset)
        self.rounds = rounds
        self.rationale_chars = rationale_chars
        self.format_penalty = float(format_penalty)
        self.switch_weight = float(switch_weight)
        self.persuasion_weight = float(persuasion_weight)

    # ------------------------------------------------------------------ tasks and prompts
    def task_ids(self) -> tuple[int | str, ...] | None:
        return self.source.task_ids()

    def _task_from_id(self, task_id: Any) -> MathProblem:
        return self.source.problem(task_id)

    def _initial_state(self, task: MathProblem) -> DiscussionState:
        return DiscussionState()

    def _system_prompt(self, agent: str) -> str:
        return system_prompt(agent, self.possible_agents, self.rounds)

    def _user_prompt(self, agent: str) -> str:
        round_index = min(self.turn, self.rounds)
        if round_index == 0:
            return user_prompt(self.task.question, agent, 0, None, {}, self.rationale_chars)
        answers, replies = self.state.answers[round_index - 1], self.state.replies[round_index - 1]
        others = {a: (answers.get(a), replies.get(a, "")) for a in self.possible_agents if a != agent}
        return user_prompt(self.task.question, agent, round_index, answers.get(agent), others, self.rationale_chars)

    # ------------------------------------------------------------------ actions
    def _apply_action(self, agent: str, action: str) -> Outcome:
        state, round_index = self.state, self.turn
        if len(state.answers) <= round_index:
            state.answers.append({})
            state.replies.append({})
            state.correct.append({})
        answer = boxed_answer(action, strict=self.strict_answers)
        correct = self._is_correct(answer)
        state.answers[round_index][agent] = answer
        state.replies[round_index][agent] = clip_text(action, max(self.rationale_chars, 1))
        state.correct[round_index][agent] = correct
        switched = ""
        if round_index > 0:
            before = state.correct[round_index - 1][agent]
            switched = "to_right" if correct and not before else "to_wrong" if before and not correct else ""
        switch = {"to_right": self.switch_weight, "to_wrong": -self.switch_weight, "": 0.0}[switched]
        parts = {"correct": float(correct), "format": -self.format_penalty if answer is None else 0.0,
                 "switch": switch, "persuasion": 0.0}
        terms: dict[str, RewardTerms] = {agent: reward_terms(**parts)}
        info: dict[str, dict[str, Any]] = {agent: {"answer": answer, "correct": correct, "switched": switched}}
        if len(state.answers[round_index]) < len(self.possible_agents):
            return Outcome(terms, info=info)
        return self._end_round(round_index, terms, info)

    def _end_round(self, round_index: int, terms: dict[str, RewardTerms],
                   info: dict[str, dict[str, Any]]) -> Outcome:
        """The round's last step: its majority, the persuasion credit, and after round T the team reward."""
        state = self.state
        answers = [state.answers[round_index][a] for a in self.possible_agents]
        majority = majority_answer(answers, strict=self.strict_answers)
        majority_correct = self._is_correct(majority)
        state.majority.append(majority)
        credit = {a: 0.0 for a in self.possible_agents}
        if round_index > 0:
            credit = persuasion_credit(state.answers[round_index - 1], state.answers[round_index],
                                       state.correct[round_index - 1], state.correct[round_index],
                                       self.persuasion_weight, strict=self.strict_answers)
        final = round_index == self.rounds
        team = float(majority_correct) if final else 0.0
        for a in self.possible_agents:
            extra = reward_terms(team=team, persuasion=credit[a])
            terms[a] = add_terms(terms[a], extra) if a in terms else extra
            info.setdefault(a, {}).update({"round_answers": list(answers), "round_majority": majority,
                                           "round_majority_correct": majority_correct})
        return Outcome(terms, terminated=final, info=info)

    def _is_correct(self, answer: str | None) -> bool:
        return is_equivalent(answer, self.task.answer, strict=self.strict_answers)

    def _info_defaults(self, agent: str) -> dict[str, Any]:
        return {"answer": "", "correct": False, "switched": "", "round_answers": [""] * len(self.possible_agents),
                "round_majority": "", "round_majority_correct": False}

    # ------------------------------------------------------------------ episode summary
    def _is_success(self) -> bool:
        return len(self.state.majority) > self.rounds and self._is_correct(self.state.majority[-1])

    def _team_progress(self) -> float:
        """The share of agents whose latest answer is correct."""
        latest: dict[str, bool] = {}
        for round_correct in self.state.correct:
            latest.update(round_correct)
        return sum(latest.values()) / len(self.possible_agents)

    def _episode_extras(self) -> dict[str, Any]:
        final = self.state.majority[-1] if len(self.state.majority) > self.rounds else None
        last = self.state.correct[-1] if self.state.correct else {}
        return {"final_answer": "" if final is None else final, "final_correct": self._is_success(),
                "num_correct_final": sum(last.values()),
                "family": self.task.family, "difficulty": self.task.difficulty, "answer": self.task.answer}

    # ------------------------------------------------------------------ scripted policies
    def _scripted_policies(self) -> dict[str, dict[str, Callable[[], Policy]]]:
        return {agent: {"oracle": lambda: self._oracle, "random": lambda agent=agent: _random_policy(self, agent)}
                for agent in self.possible_agents}

    def _oracle(self, observation: Mapping[str, Any]) -> str:
        return f"I checked the computation twice.\n\nFinal answer: \\boxed{{{self.task.answer}}}"

    # ------------------------------------------------------------------ rendering
    def _render_header(self) -> str:
        return (f"{super()._render_header()}\nproblem ({self.task.family}, level {self.task.difficulty}): "
                f"{self.task.question}\nreference answer: {self.task.answer} | rounds after round 0: {self.rounds}")

    def _render_record(self, record: TurnRecord) -> str:
        answers = self.state.answers[record.turn] if record.turn < len(self.state.answers) else {}
        answer = answers.get(record.agent)
        verdict = "correct" if self._is_correct(answer) else "wrong"
        text = (f"--- round {record.turn} | {record.agent} | answer {answer} ({verdict}) | "
                + ", ".join(f"{k}={v:+.2f}" for k, v in record.terms.items())
                + f"\n{clip_text(record.action, 600)}")
        if record.agent == self.possible_agents[-1] and record.turn < len(self.state.majority):
            majority = self.state.majority[record.turn]
            ok = "correct" if self._is_correct(majority) else "wrong"
            votes = ", ".join(f"{a}: {answers.get(a)}" for a in self.possible_agents)
            text += f"\n=== round {record.turn} votes: {votes} -> majority {majority} ({ok})"
        return text


def _random_policy(env: DiscussionEnv, agent: str) -> Policy:
    """A random small integer in a box; one reply in five has no box (seeded by agent, task and step)."""

    def policy(observation: Mapping[str, Any]) -> str:
        rng = np.random.default_rng([zlib.crc32(agent.encode()), zlib.crc32(str(env.task_id).encode()), env.num_steps])
        number = int(rng.integers(0, 100))
        return f"Maybe {number}." if rng.random() < 0.2 else f"My answer: \\boxed{{{number}}}"

    return policy
