"""The trainer's alpha: the one place training re-mixes rewards ``alpha * team + local``.

The config's one knob, ``alpha``, picks the source: ``"env"`` (default) keeps the env's own rewards (the env mixes
with its ``alpha``, 1.0 as AT-GRPO, in :func:`teamgym.core.rewards.mix`, the one mixing function, which
``teamgym.wrappers.RewardMixing`` uses too); a number or ``{agent: number}`` re-mixes with that fixed alpha
(:class:`teamgym.algos.StaticAlpha`); ``"bandit"`` lets :class:`teamgym.algos.BanditAlpha` choose each agent's
alpha (EXP3 over a grid, gap 3).

**Which alpha, when.** An alpha is *in force* from the update it weights through the rollout that follows:

1. :meth:`TrainingAlpha.rollout_alphas` gives the alphas in force to the rollout, which scores every candidate with
   them, so the tree advances on the mixer's alpha, not the env's;
2. :meth:`TrainingAlpha.apply` then credits the alphas in force with that rollout's payoff (from the second step on:
   the first rollout follows no update), the mixer draws its next alphas, and the batch is re-mixed with those (the
   acting agents' rewards and what other agents received on each row's step, so that everything the estimators read
   uses one alpha per agent) for the update they weight.

So an alpha is scored by the rollout it shaped twice, through the policy its update produced and through the tree's
choices, and never by a rollout sampled before it touched the policy (which was the case before: the arm of step t
was scored by step t's own rollout). The payoff is the mean **team return** of the rollout's episodes (each along its
chosen path, averaged over the agents' ``team_returns`` of the env's summary): the team's outcome, which every role
contributes to, not the team term of each row's own step (0 for every step of ``plan_path``'s tool). Episodes
dropped for infrastructure errors are left out. The mixer's state is part of every checkpoint, so ``--resume``
continues its draws exactly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from teamgym.algos import AlphaMixer, BanditAlpha, StaticAlpha
from teamgym.core.rewards import mix
from teamgym.rollout.batch import AgentTurnBatch

__all__ = ["TrainingAlpha", "remix_rewards", "team_return"]


class TrainingAlpha:
    """The alpha of a training run (see the module docstring).

    Args:
        alpha: the config's ``alpha``: ``"env"``, ``"bandit"``, a number or ``{agent: number}``.
        roles: the env's agents.
        seed: seeds the bandit's draws.
    """

    def __init__(self, alpha: str | float | Mapping[str, float], roles: Sequence[str], *, seed: int):
        self.roles = list(roles)
        self.mixer: AlphaMixer | None = None
        if alpha == "bandit":
            self.mixer = BanditAlpha(self.roles, seed=seed)
        elif alpha != "env":
            self.mixer = StaticAlpha(alpha if isinstance(alpha, Mapping) else float(alpha))

    def rollout_alphas(self) -> dict[str, float] | None:
        """``{agent: alpha}`` in force, for the rollout to score candidates with (``None``: the env's rewards)."""
        if self.mixer is None:
            return None
        return {agent: self.mixer.alpha_for(agent) for agent in self.roles}

    def apply(self, batch: AgentTurnBatch, episodes: Sequence[Mapping[str, Any]], *,
              credit: bool) -> tuple[dict[str, float], float | None]:
        """Credit the alphas in force with the rollout's team return (``credit``: an update used them), let the mixer
        draw the next ones, and re-mix ``batch`` in place with those. Returns ``({agent: alpha}`` for the update,
        empty for the env's own rewards; the payoff credited, or ``None``).

        Args:
            batch: the rollout's rows the update uses.
            episodes: the rollout's episode summaries (those with rows in ``batch`` are scored).
            credit: whether the alphas in force weighted an update before this rollout (every step but the first).
        """
        if self.mixer is None:
            return {}, None
        payoff = None
        if credit:
            kept = set(batch.episode_id)
            payoff = team_return([e for e in episodes if e.get("episode_id") in kept])
            self.mixer.update({"team_return": payoff})
        alphas = {agent: self.mixer.alpha_for(agent) for agent in self.roles}
        remix_rewards(batch, alphas)
        return alphas, payoff

    def state_dict(self) -> dict[str, Any] | None:
        return self.mixer.state_dict() if self.mixer is not None else None

    def load_state_dict(self, state: dict[str, Any] | None) -> None:
        if self.mixer is not None and state is not None:
            self.mixer.load_state_dict(state)


def team_return(episodes: Sequence[Mapping[str, Any]]) -> float:
    """The mean team return of ``episodes`` (each: the mean of its summary's ``team_returns`` over the agents; 0 for
    none)."""
    values = [float(np.mean(list(e["team_returns"].values()))) for e in episodes if e.get("team_returns")]
    return float(np.mean(values)) if values else 0.0


def remix_rewards(batch: AgentTurnBatch, alphas: Mapping[str, float]) -> None:
    """Re-mix the batch's rewards in place, ``alpha[agent] * team + local`` with each receiving agent's alpha.

    Both the acting agents' ``rewards`` and what other agents received on each row's step (``others_rewards``,
    from ``others_terms``).
    """
    batch.rewards = torch.tensor([mix(terms, alphas[agent]) for terms, agent in zip(batch.reward_terms, batch.agent)],
                                 dtype=batch.rewards.dtype)
    batch.others_rewards = [{other: mix(terms, alphas[other]) for other, terms in others.items()}
                            for others in batch.others_terms]
