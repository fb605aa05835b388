"""The trainer's alpha: the one place training re-mixes rewards ``alpha * team + local``.

The config's one knob, ``alpha``, picks the source: ``"env"`` (default) keeps the env's own rewards (the env mixes
with its ``alpha``, 1.0 as AT-GRPO, in :func:`teamgym.core.rewards.mix`, the one mixing function, which
``teamgym.wrappers.RewardMixing`` uses too); a number or ``{agent: number}`` re-mixes with that fixed alpha
(:class:`teamgym.algos.StaticAlpha`); ``"bandit"`` lets :class:`teamgym.algos.BanditAlpha` choose each agent's
alpha (EXP3 over a grid, gap 3); ``"correlation"`` sets it from the correlation of each agent's local and team terms
among the candidates it sampled from one state (:class:`teamgym.algos.CorrelationAlpha`, gap 3).

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

**The correlation mixer** follows the same protocol; what differs is what moves it. It is not credited with a
payoff (``update`` only records the alphas in force): in step 2, at every step including the first, it observes the
rollout's candidates (:func:`correlation_columns`) and sets the alphas of the update from its moving correlation, so
the rollout that follows is again scored with the alphas of the update before it. A rollout may move the alphas of
its own update, as a batch's statistics normalise its own advantages: the correlation describes the policy that
sampled the rollout, and this rollout is its freshest sample; no alpha is scored by its own outcome, since none is
scored at all.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from teamgym.algos import AlphaMixer, BanditAlpha, CorrelationAlpha, StaticAlpha
from teamgym.core.rewards import mix
from teamgym.rollout.batch import AgentTurnBatch

__all__ = ["TrainingAlpha", "correlation_columns", "remix_rewards", "team_return", "team_to_go"]


class TrainingAlpha:
    """The alpha of a training run (see the module docstring).

    Args:
        alpha: the config's ``alpha``: ``"env"``, ``"bandit"``, ``"correlation"``, a number or ``{agent: number}``.
        roles: the env's agents.
        seed: seeds the bandit's draws.

    Attributes:
        metrics: the mixer's own numbers after the last :meth:`apply`, for metrics.jsonl (the correlation mixer's
            ``alpha_corr/<agent>`` and ``alpha_groups/<agent>``; empty for the others).
    """

    def __init__(self, alpha: str | float | Mapping[str, float], roles: Sequence[str], *, seed: int):
        self.roles = list(roles)
        self.mixer: AlphaMixer | None = None
        self.metrics: dict[str, float] = {}
        if alpha == "bandit":
            self.mixer = BanditAlpha(self.roles, seed=seed)
        elif alpha == "correlation":
            self.mixer = CorrelationAlpha(self.roles)
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
        draw the next ones (the correlation mixer: observe ``batch``'s candidates), and re-mix ``batch`` in place with
        those. Returns ``({agent: alpha}`` for the update, empty for the env's own rewards; the payoff credited, or
        ``None``).

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
        if isinstance(self.mixer, CorrelationAlpha):
            self.mixer.observe(*correlation_columns(batch))
            self.metrics = self.mixer.metrics()
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


def team_to_go(batch: AgentTurnBatch) -> list[float | None]:
    """Each row's team return from its step on: the team terms its agent receives on that step and every later step
    of the path the candidate leads to (``None`` where the batch does not hold that path).

    The path of a chosen candidate is its episode's chosen rows after it; of a continued candidate
    (``continue_unchosen``), the episode that continues it; a candidate whose step ended its episode has nothing after
    it. Any other unchosen candidate was never played on: ``None``. Later terms count on whichever agent's step they
    arrive (``plan_path``'s tool receives the team term on the planner's step, in ``others_terms``).
    """
    steps, chosen = batch.step.tolist(), batch.chosen.tolist()
    by_episode: dict[str, list[int]] = {}
    for i, episode in enumerate(batch.episode_id):
        if chosen[i]:
            by_episode.setdefault(episode, []).append(i)
    continued = {(str(f["episode_id"]), int(f["step"]), int(f["branch"])): episode
                 for episode, f in zip(batch.episode_id, batch.fork, strict=True) if f}

    def received(row: int, agent: str) -> float:
        if batch.agent[row] == agent:
            return batch.reward_terms[row]["team"]
        return batch.others_terms[row].get(agent, {}).get("team", 0.0)

    def after(episode: str, step: int, agent: str) -> float:
        return math.fsum(received(j, agent) for j in by_episode.get(episode, ()) if steps[j] > step)

    out: list[float | None] = []
    for i, (episode, agent, branch) in enumerate(zip(batch.episode_id, batch.agent, batch.branch.tolist(),
                                                      strict=True)):
        own = batch.reward_terms[i]["team"]
        if chosen[i]:
            out.append(own + after(episode, steps[i], agent))
        elif (episode, steps[i], branch) in continued:
            out.append(own + after(continued[(episode, steps[i], branch)], steps[i], agent))
        elif batch.outcome[i]:
            out.append(own)
        else:
            out.append(None)
    return out


def correlation_columns(batch: AgentTurnBatch) -> tuple[torch.Tensor, list[str], list[float], list[float]]:
    """``(group ids, agents, local terms, team signals)`` of ``batch``'s rows for
    :meth:`teamgym.algos.CorrelationAlpha.observe`.

    **Groups**: rows of one task, agent and step with the same anchor (the state the agent acted on): a tree node's
    candidates, and in a trajectory rollout the repeats of a task that reached the same state (every repeat at step
    0). **Team signal**, per group: each candidate's :func:`team_to_go` when the batch holds it for every candidate
    of the group (a trajectory rollout; ``continue_unchosen``; candidates that all end the episode), else each
    candidate's team term on its own step. The first credits what a candidate does for the team later (the tool's
    program, through the planner's moves); the second is all a greedy tree holds for unchosen candidates, and mixing
    the two within a group would compare a candidate's whole future with another's single step. On ``plan_path``
    under ``at_grpo`` the tool's groups thus have a team signal of 0 for every candidate: no variance, and the
    tool's alpha stays where it is (:class:`~teamgym.algos.CorrelationAlpha` says why).
    """
    groups = batch.group_ids(("task_id", "agent", "step", "anchor"))
    local = [terms["local"] for terms in batch.reward_terms]
    own = [terms["team"] for terms in batch.reward_terms]
    to_go = team_to_go(batch)
    complete: dict[int, bool] = {}
    for group, value in zip(groups.tolist(), to_go, strict=True):
        complete[group] = complete.get(group, True) and value is not None
    team = [value if complete[group] and value is not None else fallback
            for group, value, fallback in zip(groups.tolist(), to_go, own, strict=True)]
    return groups, list(batch.agent), local, team
