"""The trainer's alpha: the one place training re-mixes rewards ``alpha * team + local``.

The config's one knob, ``alpha``, picks the source: ``"env"`` (default) keeps the env's own rewards (the env mixes
with its ``alpha``, 1.0 as AT-GRPO, in :func:`teamgym.core.rewards.mix`, the one mixing function, which
``teamgym.wrappers.RewardMixing`` uses too); a number or ``{agent: number}`` re-mixes every row with that fixed alpha
(:class:`teamgym.algos.StaticAlpha`); ``"bandit"`` draws each agent's alpha per step (:class:`teamgym.algos.
BanditAlpha`). At every RL step :meth:`TrainingAlpha.apply` reads each role's alpha, re-mixes the step's batch (the
acting agents' rewards and what other agents received on each row's step, so that everything the estimators read
uses one alpha per agent), then scores the alphas by the batch's mean team term. The mixer's state is part of every
checkpoint, so ``--resume`` continues its draws exactly. The tree itself advances on the env's rewards.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from teamgym.algos import AlphaMixer, BanditAlpha, StaticAlpha
from teamgym.core.rewards import mix
from teamgym.rollout.batch import AgentTurnBatch

__all__ = ["TrainingAlpha", "remix_rewards"]


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

    def apply(self, batch: AgentTurnBatch) -> dict[str, float]:
        """Re-mix ``batch`` in place with this step's alphas and update the mixer; returns ``{agent: alpha}`` used
        (empty for the env's own rewards)."""
        if self.mixer is None:
            return {}
        alphas = {agent: self.mixer.alpha_for(agent) for agent in self.roles}
        remix_rewards(batch, alphas)
        team = [terms["team"] for terms in batch.reward_terms]
        self.mixer.update({"team_return": float(np.mean(team)) if team else 0.0})
        return alphas

    def state_dict(self) -> dict[str, Any] | None:
        return self.mixer.state_dict() if self.mixer is not None else None

    def load_state_dict(self, state: dict[str, Any] | None) -> None:
        if self.mixer is not None and state is not None:
            self.mixer.load_state_dict(state)


def remix_rewards(batch: AgentTurnBatch, alphas: Mapping[str, float]) -> None:
    """Re-mix the batch's rewards in place, ``alpha[agent] * team + local`` with each receiving agent's alpha.

    Both the acting agents' ``rewards`` and what other agents received on each row's step (``others_rewards``,
    from ``others_terms``).
    """
    batch.rewards = torch.tensor([mix(terms, alphas[agent]) for terms, agent in zip(batch.reward_terms, batch.agent)],
                                 dtype=batch.rewards.dtype)
    batch.others_rewards = [{other: mix(terms, alphas[other]) for other, terms in others.items()}
                            for others in batch.others_terms]
