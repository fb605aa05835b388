"""Where alpha comes from in ``r = alpha * team + local``: a static alpha and an adaptive (bandit) alpha (gap 3).

The mixing itself is :func:`teamgym.core.rewards.mix`, the one function every env, wrapper and the trainer use.

Every mixer follows :class:`AlphaMixer`: ``alpha_for(agent) -> float`` (read at every step, constant between
updates), ``update(episode_stats)`` once per batch of episodes, ``state_dict()`` / ``load_state_dict(state)``,
and ``history`` (the alphas used, one entry per update, for logging alpha over training).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from teamgym.errors import CheckpointError, InvalidArgumentError

__all__ = ["AlphaMixer", "StaticAlpha", "BanditAlpha"]


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
