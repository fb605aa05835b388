"""Where alpha comes from in ``r = alpha * team + local``: a static alpha and two adaptive ones, a bandit over alpha
values and a per-agent alpha from the correlation of local and team terms (gap 3).

The mixing itself is :func:`teamgym.core.rewards.mix`, the one function every env, wrapper and the trainer use.

Every mixer follows :class:`AlphaMixer`: ``alpha_for(agent) -> float`` (read at every step, constant between
updates), ``update(episode_stats)`` once per batch of episodes, ``state_dict()`` / ``load_state_dict(state)``,
and ``history`` (the alphas used, one entry per update, for logging alpha over training). :class:`CorrelationAlpha`
learns from candidates rather than episodes: it also has ``observe(group_ids, agents, local, team)``, which the
trainer calls with each rollout's rows (:mod:`teamgym.train.alpha`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from teamgym.errors import CheckpointError, InvalidArgumentError

__all__ = ["AlphaMixer", "StaticAlpha", "BanditAlpha", "CorrelationAlpha", "ZERO_SPREAD"]


@runtime_checkable
class AlphaMixer(Protocol):
    """What the reward wrappers accept as an alpha source."""

    def alpha_for(self, agent: str) -> float: ...

    def update(self, episode_stats: Mapping[str, float]) -> None: ...

    def state_dict(self) -> dict: ...

    def load_state_dict(self, state: dict) -> None: ...


class StaticAlpha:
    """A fixed alpha, for all agents or per agent.

    ``StaticAlpha(1.0)`` or ``StaticAlpha({"coder": 1.0, "tester": 0.5}, default=1.0)`` (unlisted agents get
    ``default``).
    """

    def __init__(self, alpha: float | Mapping[str, float] = 1.0, *, default: float = 1.0):
        table = dict(alpha) if isinstance(alpha, Mapping) else {}
        for name, value in [*table.items(), ("default", default if table else alpha)]:
            if not isinstance(value, (int, float)) or not math.isfinite(value):
                raise InvalidArgumentError(f"alpha for {name!r} must be a finite number, got {value!r}")
        self.table = {k: float(v) for k, v in table.items()}
        self.default = float(default if table else alpha)
        self.history: list[dict[str, float]] = []

    def alpha_for(self, agent: str) -> float:
        """The agent's alpha."""
        return self.table.get(agent, self.default)

    def update(self, episode_stats: Mapping[str, float]) -> None:
        """Record the alphas in use (static: nothing to learn)."""
        self.history.append({"default": self.default, **self.table})

    def state_dict(self) -> dict:
        return {"table": dict(self.table), "default": self.default, "history": list(self.history)}

    def load_state_dict(self, state: dict) -> None:
        try:
            self.table = {k: float(v) for k, v in state["table"].items()}
            self.default, self.history = float(state["default"]), list(state["history"])
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise CheckpointError(f"not a StaticAlpha state_dict ({err})") from None


class BanditAlpha:
    """Adaptive alpha by EXP3 over a grid of alpha values, scored by team return (teamgym design, gap 3).

    One independent EXP3 bandit per agent (Auer et al. 2002, "The nonstochastic multiarmed bandit problem",
    Fig. 1). Update rule, once per batch (``update({"team_return": R})``):

    1. the payoff ``x = clip((R - lo) / (hi - lo), 0, 1)``, where lo/hi are the running min/max of team
    returns
       seen so far (x = 0.5 until they differ);
    2. for each agent with chosen arm j and probabilities ``p = (1-gamma) w/sum(w) + gamma/K``:
       ``w_j <- w_j * exp(gamma * (x / p_j) / K)`` (importance-weighted, so unplayed arms are not penalised);
       weights are renormalised (max 1) to avoid overflow;
    3. each agent draws its next arm from p with the mixer's own ``numpy.random.Generator`` (seeded; saved in
       ``state_dict``).

    Compare it with static alpha in {0, 0.5, 1, 2} at equal budget; ``history`` logs the alphas chosen.

    Args:
        agents: agent names.
        grid: candidate alphas.
        gamma: EXP3 exploration rate in (0, 1].
        seed: seed of the private generator.
    """

    def __init__(
        self,
        agents: Sequence[str],
        grid: Sequence[float] = (0.0, 0.5, 1.0, 2.0),
        *,
        gamma: float = 0.1,
        seed: int = 0,
    ):
        if not agents:
            raise InvalidArgumentError("BanditAlpha needs at least one agent name, got none")
        if len(grid) < 1 or not all(math.isfinite(float(a)) for a in grid):
            raise InvalidArgumentError(f"grid must be a non-empty list of finite alphas, got {grid}")
        if not 0.0 < gamma <= 1.0:
            raise InvalidArgumentError(f"gamma must be in (0, 1], got {gamma}: 0.1 is a sane default")
        self.agents = list(agents)
        self.grid = [float(a) for a in grid]
        self.gamma = float(gamma)
        self.rng = np.random.default_rng(seed)
        self.weights = {agent: np.ones(len(self.grid)) for agent in self.agents}
        self.low = math.inf
        self.high = -math.inf
        self.history: list[dict[str, float]] = []
        self.chosen = {agent: self._draw(agent) for agent in self.agents}

    def probabilities(self, agent: str) -> np.ndarray:
        """EXP3 arm probabilities for ``agent``."""
        w = self.weights[self._known(agent)]
        return (1.0 - self.gamma) * w / w.sum() + self.gamma / len(self.grid)

    def _known(self, agent: str) -> str:
        if agent not in self.weights:
            raise InvalidArgumentError(
                f"unknown agent {agent!r} for BanditAlpha: expected one of {self.agents}"
            )
        return agent

    def _draw(self, agent: str) -> int:
        return int(self.rng.choice(len(self.grid), p=self.probabilities(agent)))

    def alpha_for(self, agent: str) -> float:
        """The agent's current alpha (fixed until the next :meth:`update`)."""
        return self.grid[self.chosen[self._known(agent)]]

    def update(self, episode_stats: Mapping[str, float]) -> None:
        """Score the current alphas by ``episode_stats["team_return"]`` (batch mean) and draw new ones."""
        if "team_return" not in episode_stats or not math.isfinite(float(episode_stats["team_return"])):
            raise InvalidArgumentError(
                f"BanditAlpha.update needs a finite 'team_return', got {dict(episode_stats)!r}"
            )
        team_return = float(episode_stats["team_return"])
        self.history.append({agent: self.alpha_for(agent) for agent in self.agents})
        self.low, self.high = min(self.low, team_return), max(self.high, team_return)
        payoff = 0.5 if self.high <= self.low else (team_return - self.low) / (self.high - self.low)
        k = len(self.grid)
        for agent in self.agents:
            arm = self.chosen[agent]
            p = self.probabilities(agent)
            w = self.weights[agent]
            w[arm] *= math.exp(self.gamma * (payoff / p[arm]) / k)
            w /= w.max()
        self.chosen = {agent: self._draw(agent) for agent in self.agents}

    def state_dict(self) -> dict:
        return {
            "agents": list(self.agents),
            "grid": list(self.grid),
            "gamma": self.gamma,
            "weights": {a: w.tolist() for a, w in self.weights.items()},
            "chosen": dict(self.chosen),
            "low": self.low,
            "high": self.high,
            "history": list(self.history),
            "rng": self.rng.bit_generator.state,
        }

    def load_state_dict(self, state: dict) -> None:
        try:
            self.agents, self.grid, self.gamma = (
                list(state["agents"]),
                list(state["grid"]),
                float(state["gamma"]),
            )
            self.weights = {a: np.asarray(w, dtype=np.float64) for a, w in state["weights"].items()}
            self.chosen = {a: int(j) for a, j in state["chosen"].items()}
            self.low, self.high = float(state["low"]), float(state["high"])
            self.history = list(state["history"])
            self.rng = np.random.default_rng()
            self.rng.bit_generator.state = state["rng"]
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise CheckpointError(f"not a BanditAlpha state_dict ({err})") from None


#: Within a group, a term whose values spread by no more than this is constant: reward terms are rounded to 12
#: decimals (:func:`teamgym.core.rewards.reward_terms`), so smaller differences are rounding, not signal, and would
#: give a correlation of +-1 from noise.
ZERO_SPREAD = 1e-9


class CorrelationAlpha:
    """Per-agent alpha from the correlation between the local and the team term of an agent's candidates (gap 3).

    The question an alpha answers is how much the team term must weigh for an agent's update to serve the team. If,
    among the candidates an agent samples from one state, those with a better local term are also better for the
    team (correlation ``rho -> 1``), the local term already points the right way and needs little team weight; if
    they are worse for the team (``rho -> -1``), the local term pulls against the team and the team term must weigh
    the most. So, per agent::

        rho_g      = Pearson correlation of (local, team) over the candidates of group g
        rho_batch  = mean of rho_g over the agent's informative groups of the batch
        rho       <- (1 - rate) * rho + rate * rho_batch       (only when the batch has an informative group)
        alpha      = low + (high - low) * (1 - rho) / 2

    ``rho`` starts at 0, so alpha starts at the middle of the range, ``(low + high) / 2`` (1.0 for the default
    [0, 2]: AT-GRPO's alpha): the prior when nothing is known. Only correlations *within* a group count: across
    states, an easy state makes both terms high, which says nothing about whether one term leads to the other. A
    group is *informative* when it holds at least two candidates and neither term is constant in it (spread above
    :data:`ZERO_SPREAD`); a constant term has no correlation, and calling it 0 would pull alpha to the middle for
    lack of evidence, so such groups are left out and a batch without informative groups leaves the estimate as it
    was. Correlations are averaged plainly (not Fisher-z): with a handful of candidates per group, ``|rho_g| = 1`` is
    common and its z is infinite. The EMA forgets old policies' candidates; ``rate`` is the weight of each batch.

    What the ``team`` signal is (the trainer's choice, :func:`teamgym.train.alpha.correlation_columns`) matters: on
    ``plan_path`` the team term reaches the tool on the planner's step, so the tool's own-step team term is always 0.

    Unlike :class:`BanditAlpha` it is deterministic (no draws) and is not scored by team return: ``update`` only
    records the alphas in force in ``history``. Under :class:`teamgym.wrappers.RewardMixing` (episodes, no
    candidates) it therefore stays at its current alpha unless the caller feeds it :meth:`observe`.

    Args:
        agents: agent names.
        low: the alpha of a local term fully aligned with the team (rho = 1); at least 0.
        high: the alpha of a local term fully opposed to it (rho = -1); above ``low``.
        rate: the weight of each batch in the moving average, in (0, 1].
    """

    def __init__(self, agents: Sequence[str], *, low: float = 0.0, high: float = 2.0, rate: float = 0.1):
        if not agents or isinstance(agents, str):
            raise InvalidArgumentError(f"CorrelationAlpha needs a list of agent names, got {agents!r}")
        for name, value in (("low", low), ("high", high), ("rate", rate)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise InvalidArgumentError(f"CorrelationAlpha {name}={value!r}: expected a finite number")
        if low < 0.0:
            raise InvalidArgumentError(
                f"CorrelationAlpha low={low!r}: expected >= 0 (a negative alpha pays an agent for hurting the team); "
                "0 is the default"
            )
        if high <= low:
            raise InvalidArgumentError(
                f"CorrelationAlpha high={high!r} with low={low!r}: expected high > low (default [0, 2]); for one "
                "fixed alpha use StaticAlpha"
            )
        if not 0.0 < rate <= 1.0:
            raise InvalidArgumentError(f"CorrelationAlpha rate={rate!r}: expected a number in (0, 1]; 0.1 is the "
                                       "default (about the last ten batches)")
        self.agents = list(agents)
        self.low, self.high, self.rate = float(low), float(high), float(rate)
        self.rho = {agent: 0.0 for agent in self.agents}
        self.groups = {agent: 0 for agent in self.agents}  # informative groups in the last observed batch
        self.history: list[dict[str, float]] = []

    def _known(self, agent: str) -> str:
        if agent not in self.rho:
            raise InvalidArgumentError(f"unknown agent {agent!r} for CorrelationAlpha: expected one of {self.agents}")
        return agent

    def alpha_for(self, agent: str) -> float:
        """The agent's alpha, ``low + (high - low) * (1 - rho) / 2`` (fixed until the next :meth:`observe`)."""
        return self.low + (self.high - self.low) * (1.0 - self.rho[self._known(agent)]) / 2.0

    def observe(self, group_ids: Sequence[int] | np.ndarray | Any, agents: Sequence[str],
                local: Sequence[float] | np.ndarray | Any, team: Sequence[float] | np.ndarray | Any) -> None:
        """Fold one batch of candidates into each agent's correlation (the rule in the class docstring).

        Args:
            group_ids: ``(N,)`` ints: rows with equal ids were sampled from one state (the agent is part of the key:
                two agents' rows under one id are two groups).
            agents: ``(N,)`` the acting agent of each row.
            local: ``(N,)`` each row's local term.
            team: ``(N,)`` each row's team signal.
        """
        try:
            groups = np.asarray(group_ids.tolist() if hasattr(group_ids, "tolist") else list(group_ids),
                                dtype=np.int64).reshape(-1)
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"CorrelationAlpha.observe: group_ids must be ints (one per row), got "
                                       f"{group_ids!r}: number the groups, e.g. with teamgym.algos.group_ids"
                                       ) from None
        x = _finite_column("local", local)
        y = _finite_column("team", team)
        if not len(groups) == len(agents) == len(x) == len(y):
            raise InvalidArgumentError(
                f"CorrelationAlpha.observe got {len(groups)} group ids, {len(agents)} agents, {len(x)} local and "
                f"{len(y)} team values: give one of each per row"
            )
        index = {agent: i for i, agent in enumerate(self.agents)}
        who = np.asarray([index[self._known(agent)] for agent in agents], dtype=np.int64)
        self.groups = {agent: 0 for agent in self.agents}
        if not len(groups):
            return
        keys, g = np.unique(np.stack([groups, who], axis=1), axis=0, return_inverse=True)
        g, m = g.reshape(-1), len(keys)
        count = np.bincount(g, minlength=m)

        def spread(values: np.ndarray) -> np.ndarray:
            high, low = np.full(m, -np.inf), np.full(m, np.inf)
            np.maximum.at(high, g, values)
            np.minimum.at(low, g, values)
            return high - low

        def centred(values: np.ndarray) -> np.ndarray:
            return values - (np.bincount(g, values, minlength=m) / count)[g]

        informative = (count >= 2) & (spread(x) > ZERO_SPREAD) & (spread(y) > ZERO_SPREAD)
        dx, dy = centred(x), centred(y)
        sxy = np.bincount(g, dx * dy, minlength=m)
        sxx, syy = np.bincount(g, dx * dx, minlength=m), np.bincount(g, dy * dy, minlength=m)
        rho = np.clip(sxy[informative] / np.sqrt(sxx[informative] * syy[informative]), -1.0, 1.0)
        owner = keys[informative, 1]
        totals = np.bincount(owner, rho, minlength=len(self.agents))
        counts = np.bincount(owner, minlength=len(self.agents))
        for i, agent in enumerate(self.agents):
            if counts[i]:
                self.rho[agent] = (1.0 - self.rate) * self.rho[agent] + self.rate * float(totals[i] / counts[i])
                self.groups[agent] = int(counts[i])

    def update(self, episode_stats: Mapping[str, float]) -> None:
        """Record the alphas in force (the estimate moves in :meth:`observe`, not with episode outcomes)."""
        self.history.append({agent: self.alpha_for(agent) for agent in self.agents})

    def metrics(self) -> dict[str, float]:
        """``alpha_corr/<agent>`` (the moving correlation) and ``alpha_groups/<agent>`` (the informative groups of
        the last batch observed: 0 means the estimate did not move)."""
        return {**{f"alpha_corr/{agent}": rho for agent, rho in self.rho.items()},
                **{f"alpha_groups/{agent}": float(n) for agent, n in self.groups.items()}}

    def state_dict(self) -> dict:
        return {"agents": list(self.agents), "low": self.low, "high": self.high, "rate": self.rate,
                "rho": dict(self.rho), "groups": dict(self.groups), "history": list(self.history)}

    def load_state_dict(self, state: dict) -> None:
        try:
            agents = list(state["agents"])
            low, high, rate = float(state["low"]), float(state["high"]), float(state["rate"])
            rho = {agent: float(state["rho"][agent]) for agent in agents}
            groups = {agent: int(state["groups"][agent]) for agent in agents}
            history = list(state["history"])
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise CheckpointError(f"not a CorrelationAlpha state_dict ({err!r})") from None
        self.agents, self.low, self.high, self.rate = agents, low, high, rate
        self.rho, self.groups, self.history = rho, groups, history


def _finite_column(name: str, values: Any) -> np.ndarray:
    out = np.asarray(values.tolist() if hasattr(values, "tolist") else list(values), dtype=np.float64).reshape(-1)
    bad = np.flatnonzero(~np.isfinite(out))
    if len(bad):
        raise InvalidArgumentError(f"CorrelationAlpha.observe: {name} must be finite, got {out[bad[0]]} at row "
                                   f"{int(bad[0])}: replace NaN/inf reward terms before observing them")
    return out
