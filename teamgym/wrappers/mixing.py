"""``RewardMixing``: ``rewards[agent] = alpha * team + local``, alpha static or adaptive (AT-GRPO's mixing).

AT-GRPO (arXiv 2510.11062, Sec. 4) rewards each agent with ``alpha * r_team + r_local``, alpha = 1. This
wrapper recomputes every agent's reward at every step from the reward terms the wrapped env reports (which it
leaves untouched), with alpha from a float, a dict per agent, or an adaptive mixer from :mod:`teamgym.algos`
(any object with ``alpha_for(agent)``, ``update(stats)``, ``state_dict()``, ``load_state_dict(state)``).

The alphas are read from the mixer at ``reset`` and held for the whole episode; when an episode ends the
wrapper calls ``mixer.update({"team_return": R, "success": s})`` (``R``: the episode's team return as defined
in :func:`team_return`, ``s``: 1.0 if the summary says solved), unless ``update_mixer=False`` (then the
trainer updates it, e.g. once per batch). The alpha used is logged in ``infos[agent]["alpha"]`` at every step.

The mixer's state is part of the wrapper's snapshot: restore then the same actions replays the same alphas,
which also means updates made after a snapshot are undone by restoring it. With branching rollouts, pass
``update_mixer=False`` and update the mixer from the batch.

>>> from tests.support.relay_env import RelayEnv
>>> env = RewardMixing(RelayEnv(), alpha={"speaker": 0.0, "listener": 2.0})
>>> env.reset(seed=0, options={"task_id": "apple"})
>>> env.step("The word is apple")
>>> env.step("apple")
>>> env.rewards["listener"], env.infos["listener"]["reward_terms"]["team"], env.infos["listener"]["alpha"]
(2.0, 1.0, 2.0)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pettingzoo import AECEnv

from teamgym.algos import AlphaMixer
from teamgym.core.env import EPISODE_KEY
from teamgym.core.rewards import RewardTerms, mix
from teamgym.errors import InvalidArgumentError
from teamgym.wrappers.base import RewardWrapper

__all__ = ["RewardMixing", "team_return"]


def team_return(team_rewards: Mapping[str, float]) -> float:
    """The team's return: the mean over agents of the team terms each agent received (0 for no agents).

    The mean rather than the sum keeps the scale of a shared team reward (every agent receiving the same team
    term) independent of the team size.
    """
    return math.fsum(team_rewards.values()) / len(team_rewards) if team_rewards else 0.0


class RewardMixing(RewardWrapper):
    """Rewards ``alpha * team + local`` for every agent at every step; ``reward_terms`` untouched.

    Args:
        env: the env (or wrapper) to wrap.
        alpha: a float, a dict ``{agent: float}`` (missing agents: 1.0) or an adaptive mixer (``AlphaMixer``).
        update_mixer: call ``mixer.update`` at the end of every episode (adaptive mixers only).

    Example:
        >>> from tests.support.relay_env import RelayEnv
        >>> env = RewardMixing(RelayEnv(), alpha=0.5)
        >>> env.reset(seed=0, options={"task_id": "river"})
        >>> env.step("river")
        >>> env.step("river")
        >>> env.rewards["listener"], env.alpha["listener"]
        (1.0, 0.5)
    """

    def __init__(
        self, env: AECEnv, alpha: float | Mapping[str, float] | AlphaMixer = 1.0, *, update_mixer: bool = True
    ):
        super().__init__(env)
        self.mixer: AlphaMixer | None = None
        self._static: dict[str, float] = {}
        agents = list(env.possible_agents)
        if isinstance(alpha, AlphaMixer):
            self.mixer = alpha
        elif isinstance(alpha, Mapping):
            unknown = sorted(set(alpha) - set(agents))
            if unknown:
                raise InvalidArgumentError(
                    f"RewardMixing alpha names agents {unknown} that the env does not have: agents are "
                    f"{agents}"
                )
            self._static = {a: _finite(a, alpha.get(a, 1.0)) for a in agents}
        else:
            self._static = {a: _finite(a, alpha) for a in agents}
        self.update_mixer = update_mixer
        self._team: dict[str, float] = {}
        self._alpha: dict[str, float] = self._current_alphas()

    @property
    def alpha(self) -> dict[str, float]:
        """The alpha of each agent in this episode (check_env reads it for its reward invariant)."""
        return dict(self._alpha)

    def alpha_for(self, agent: str) -> float:
        """The agent's alpha in this episode."""
        return self._alpha[agent]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        self._team = {a: 0.0 for a in self.env.possible_agents}
        self._alpha = self._current_alphas()
        super().reset(seed=seed, options=options)

    def _current_alphas(self) -> dict[str, float]:
        if self.mixer is None:
            return dict(self._static)
        return {a: _finite(a, self.mixer.alpha_for(a)) for a in self.env.possible_agents}

    def _step_terms(
        self, acting: str, action: str, terms: Mapping[str, RewardTerms]
    ) -> tuple[dict[str, RewardTerms], dict[str, float]]:
        for a, t in terms.items():
            self._team[a] = self._team.get(a, 0.0) + t["team"]
        return {a: dict(t) for a, t in terms.items()}, {}

    def _reward(self, agent: str, terms: RewardTerms, inner_reward: float, delta: float) -> float:
        return mix(terms, self.alpha_for(agent))

    def _step_info(self, agent: str) -> dict[str, Any]:
        return {"alpha": self.alpha_for(agent)}

    def _episode_end(self) -> None:
        if self.mixer is None or not self.update_mixer:
            return
        summary = (
            next((self.infos[a].get(EPISODE_KEY) for a in self.infos if EPISODE_KEY in self.infos[a]), None) or {}
        )
        self.mixer.update(
            {"team_return": team_return(self._team), "success": float(bool(summary.get("success")))}
        )

    def _get_extra_state(self) -> Any:
        mixer = self.mixer.state_dict() if self.mixer is not None else None
        return {"team": self._team, "alpha": self._alpha, "mixer": mixer}

    def _set_extra_state(self, state: Any) -> None:
        self._team, self._alpha = state["team"], state["alpha"]
        if self.mixer is not None:
            self.mixer.load_state_dict(state["mixer"])


def _finite(agent: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidArgumentError(
            f"RewardMixing alpha for {agent!r} is {value!r}: expected a finite float (1.0 = AT-GRPO's mixing)"
        )
    return float(value)
