"""``ProcessReward``: a per-step process reward from a scorer, added to the acting agent's local reward.

After each live step of agent ``a`` with action ``x`` the wrapper asks a scorer for a float ``p`` and adds
``weight * p`` to ``a``'s reward. The reward-terms contract stays true: ``reward_terms[term]`` (default
``"process"``) holds the *weighted* value ``weight * p`` (added to what an inner ``ProcessReward`` with the
same term name put there), ``local`` grows by the same amount, so the parts still sum to ``local`` and
``rewards == alpha * team + local``. The raw score is logged in ``infos[a][term + "_score"]``.

Scorers: any callable ``scorer(env, agent, action) -> float`` (called with the wrapped env, after the step),
or a :class:`StepScorer`, which receives a :class:`ProcessStep` holding also the prompt the agent acted on and
its info before the step. Shipped: :class:`~teamgym.wrappers.scorers.EnvProgressScorer` (the env's own
progress signal), :class:`~teamgym.wrappers.scorers.MonteCarloScorer` (mean team return of rollouts from a
snapshot, as MASPRM/TreeRL value targets), :class:`~teamgym.wrappers.scorers.TextScorer` (any ``fn(prompt,
action)``) and :class:`~teamgym.wrappers.prm.TransformersPRM` (a small learned process reward model).

>>> from tests.support.relay_env import RelayEnv
>>> env = ProcessReward(RelayEnv(), lambda env, agent, action: float(len(action) < 20), weight=0.5)
>>> env.reset(seed=0, options={"task_id": "apple"})
>>> env.step("The word is apple")
>>> env.infos["speaker"]["reward_terms"]
{'team': 0.0, 'local': 0.5, 'format': 0.0, 'process': 0.5}
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pettingzoo import AECEnv

from teamgym.core.rewards import RESERVED_TERMS, RewardTerms, add_terms
from teamgym.errors import InvalidArgumentError
from teamgym.wrappers.base import RewardWrapper

__all__ = ["ProcessReward", "ProcessStep", "StepScorer", "Scorer"]

#: A plain scorer: ``scorer(env, agent, action) -> float``, called after the step with the wrapped env.
Scorer = Callable[[AECEnv, str, str], float]


@dataclass(frozen=True)
class ProcessStep:
    """What a :class:`StepScorer` sees about the step it scores.

    Attributes:
        env: the wrapped env, after the step (read it; a scorer that steps it must restore it, as
        MonteCarloScorer). agent: the agent that acted. action: its completion. prompt: the prompt text it
        acted on (``observation["prompt"]`` before the step). info_before: ``infos[agent]`` before the step
        (e.g. the previous value of a progress signal).
    """

    env: AECEnv
    agent: str
    action: str
    prompt: str
    info_before: Mapping[str, Any] = field(default_factory=dict)


class StepScorer:
    """Base of scorers that need more than ``(env, agent, action)``: override :meth:`score_step`."""

    def score_step(self, step: ProcessStep) -> float:
        raise NotImplementedError

    def __call__(self, env: AECEnv, agent: str, action: str) -> float:
        """Score a step from the plain-scorer arguments (the prompt and the info before it: empty)."""
        return self.score_step(ProcessStep(env, agent, action, "", {}))


class ProcessReward(RewardWrapper):
    """Adds ``weight * scorer(...)`` to the acting agent's reward, listed as the reward term ``term``.

    Args:
        env: the env (or wrapper) to wrap.
        scorer: ``scorer(env, agent, action) -> float`` or a :class:`StepScorer`.
        weight: the process reward's weight (finite float).
        term: the reward-term name (not ``team``/``local``).

    Example:
        >>> from tests.support.tally_env import TallyEnv
        >>> from teamgym.wrappers import EnvProgressScorer
        >>> env = ProcessReward(TallyEnv(), EnvProgressScorer(), weight=2.0)
        >>> env.reset(seed=0, options={"task_id": 0})
        >>> env.step("5")
        >>> env.rewards["alice"], env.infos["alice"]["process_score"]
        (1.0, 0.5)
    """

    def __init__(
        self, env: AECEnv, scorer: Scorer | StepScorer, weight: float = 1.0, *, term: str = "process"
    ):
        super().__init__(env)
        if not callable(scorer) and not isinstance(scorer, StepScorer):
            raise InvalidArgumentError(
                f"ProcessReward scorer={scorer!r}: expected a callable scorer(env, agent, action) -> float "
                "or a StepScorer (e.g. EnvProgressScorer())"
            )
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight):
            raise InvalidArgumentError(f"ProcessReward weight={weight!r}: expected a finite float, e.g. 1.0")
        if not isinstance(term, str) or not term or term in RESERVED_TERMS:
            raise InvalidArgumentError(
                f"ProcessReward term={term!r}: expected a term name other than {sorted(RESERVED_TERMS)}, "
                "e.g. 'process'"
            )
        self.scorer = scorer
        self.weight = float(weight)
        self.term = term
        self._scores: dict[str, float] = {}
        self._before: tuple[str, dict[str, Any]] = ("", {})

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        self._scores = {}
        super().reset(seed=seed, options=options)

    def step(self, action: Any) -> None:
        agent, live = self._live_selection()
        if live and isinstance(action, str):
            observation = self.env.observe(agent)
            prompt = observation.get("prompt", "") if isinstance(observation, Mapping) else str(observation)
            self._before = (str(prompt), dict(self.env.infos[agent]))
        self._scores = {}
        super().step(action)

    def _step_terms(
        self, acting: str, action: str, terms: Mapping[str, RewardTerms]
    ) -> tuple[dict[str, RewardTerms], dict[str, float]]:
        score = self._score(acting, action)
        self._scores = {acting: score}
        value = self.weight * score
        out = {a: dict(t) for a, t in terms.items()}
        out[acting] = add_terms(out[acting], {"local": value, self.term: value})
        return out, {acting: value}

    def _score(self, agent: str, action: str) -> float:
        if isinstance(self.scorer, StepScorer):
            prompt, info_before = self._before
            score = self.scorer.score_step(ProcessStep(self.env, agent, action, prompt, info_before))
        else:
            score = self.scorer(self.env, agent, action)
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
            raise InvalidArgumentError(
                f"process scorer {self.scorer!r} returned {score!r} for {agent!r}: scorers must return a "
                "finite float"
            )
        return float(score)

    def _step_info(self, agent: str) -> dict[str, Any]:
        return {f"{self.term}_score": self._scores[agent]} if agent in self._scores else {}

    def _get_extra_state(self) -> Any:
        return {"scores": self._scores}

    def _set_extra_state(self, state: Any) -> None:
        self._scores = state["scores"]
