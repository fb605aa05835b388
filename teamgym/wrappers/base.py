"""Wrapper bases: ``TextEnvWrapper`` (forwarding, snapshots) and ``RewardWrapper`` (own reward views).

PettingZoo's ``BaseWrapper`` forwards every public attribute it does not define itself (and
``_cumulative_rewards``) to the env it wraps, so a wrapper that only observes (a recorder) needs nothing more.
A wrapper that *changes* rewards must not write into the wrapped env's dicts (PettingZoo's style guide:
wrappers never touch ``unwrapped`` state). ``RewardWrapper`` therefore keeps its own ``rewards``,
``_cumulative_rewards`` and ``infos`` views, rebuilt after every step from the views of the layer below, with
PettingZoo's bookkeeping (the acting agent's cumulative reward restarts when it acts; dead steps drop the
finished agent and clear rewards), so that ``last()`` and ``api_test`` see a consistent env. Wrappers compose
because each layer reads only the public views of the layer below.

Snapshots: ``snapshot()`` returns a :class:`WrapperSnapshot` holding the inner snapshot and the wrapper's own
state; ``restore`` puts both back, so that restore then the same actions gives identical observations, rewards
and infos through any stack of wrappers.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pettingzoo import AECEnv
from pettingzoo.utils import BaseWrapper

from teamgym.core.env import EPISODE_KEY, dead_step_infos, episode_info, require_episode
from teamgym.core.rewards import RewardTerms, add_terms, zero_terms
from teamgym.errors import InvalidArgumentError, SnapshotError

__all__ = ["TextEnvWrapper", "RewardWrapper", "WrapperSnapshot"]


@dataclass(frozen=True)
class WrapperSnapshot:
    """A snapshot taken through a wrapper: the wrapped env's snapshot plus the wrapper's own state.

    Attributes:
        wrapper: the wrapper's class name (a snapshot restores only into the same kind of wrapper).
        inner: the wrapped env's snapshot.
        state: the wrapper's own state (deep-copied).
    """

    wrapper: str
    inner: Any
    state: Any


class TextEnvWrapper(BaseWrapper):
    """Base of every teamgym wrapper: forwards the AEC API and carries snapshots through the wrapper.

    Subclasses with state override :meth:`_get_state` / :meth:`_set_state` (called with deep copies).

    Args:
        env: a PettingZoo ``AECEnv`` (a teamgym env or another wrapper).
    """

    def __init__(self, env: AECEnv):
        if not isinstance(env, AECEnv):
            raise InvalidArgumentError(
                f"{type(self).__name__}(env={type(env).__name__}): expected a PettingZoo AECEnv, e.g. "
                "teamgym.make('coder_tester-v0') (wrap the AEC env, not its parallel view)"
            )
        super().__init__(env)
        self.metadata = dict(getattr(env, "metadata", {}))

    def snapshot(self) -> WrapperSnapshot:
        """The wrapped env's snapshot plus this wrapper's state; :meth:`restore` brings both back."""
        return WrapperSnapshot(type(self).__name__, self.env.snapshot(), copy.deepcopy(self._get_state()))

    def restore(self, snapshot: WrapperSnapshot) -> None:
        """Bring the wrapped env and this wrapper back to ``snapshot`` (taken by the same kind of wrapper)."""
        if not isinstance(snapshot, WrapperSnapshot) or snapshot.wrapper != type(self).__name__:
            taken = snapshot.wrapper if isinstance(snapshot, WrapperSnapshot) else type(snapshot).__name__
            raise SnapshotError(
                f"{type(self).__name__}.restore got a snapshot of {taken}: restore a snapshot "
                "taken through the same stack of wrappers"
            )
        self.env.restore(snapshot.inner)
        self._set_state(copy.deepcopy(snapshot.state))

    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """PettingZoo's ``last()`` on this wrapper's views (refused before ``reset()`` and after the episode)."""
        require_episode(self, "last")
        return super().last(observe)

    def _get_state(self) -> Any:
        return None

    def _set_state(self, state: Any) -> None:
        """Restore what :meth:`_get_state` returned (stateless wrappers: nothing)."""

    def _live_selection(self) -> tuple[str | None, bool]:
        """The wrapped env's selected agent, and whether it is live (its next step is a real action)."""
        agent = getattr(self.env, "agent_selection", None)
        live = (
            agent is not None
            and agent in self.env.agents
            and not (self.env.terminations[agent] or self.env.truncations[agent])
        )
        return agent, live

    def __str__(self) -> str:
        return f"{type(self).__name__}<{self.env!s}>"


class RewardWrapper(TextEnvWrapper):
    """A wrapper that rewrites reward terms and rewards, keeping its own consistent ``rewards``/``infos``
    views.

    Subclasses override :meth:`_step_terms` (new terms and reward deltas for the step just taken) and/or
    :meth:`_reward` (how terms become a reward), and optionally :meth:`_step_info`, :meth:`_episode_end`,
    :meth:`_get_extra_state`, :meth:`_set_extra_state`.

    Every agent's ``infos[agent]`` is the wrapped layer's, with ``reward_terms`` and
    ``cumulative_reward_terms`` replaced by this wrapper's, and the episode summary's ``returns`` recomputed
    with this wrapper's rewards (every reward the agent received in the episode, as the base env counts them).
    """

    def __init__(self, env: AECEnv):
        super().__init__(env)
        self.rewards: dict[str, float] = {}
        self._cumulative_rewards: dict[str, float] = {}
        self.infos: dict[str, dict[str, Any]] = {}
        self._cumulative_terms: dict[str, RewardTerms] = {}
        self._returns: dict[str, float] = {}

    # ------------------------------------------------------------------ hooks
    def _step_terms(
        self, acting: str, action: str, terms: Mapping[str, RewardTerms]
    ) -> tuple[dict[str, RewardTerms], dict[str, float]]:
        """This step's terms per agent and the reward added per agent, from the wrapped layer's ``terms``."""
        return {a: dict(t) for a, t in terms.items()}, {}

    def _reward(self, agent: str, terms: RewardTerms, inner_reward: float, delta: float) -> float:
        """The agent's reward this step (default: the wrapped layer's reward plus ``delta``)."""
        return inner_reward + delta

    def _step_info(self, agent: str) -> dict[str, Any]:
        """Extra entries for ``infos[agent]`` after every reset and step."""
        return {}

    def _episode_end(self) -> None:
        """Called once when an episode finishes, after the final step's views are built."""

    def _get_extra_state(self) -> Any:
        return None

    def _set_extra_state(self, state: Any) -> None:
        """Restore what :meth:`_get_extra_state` returned."""

    # ------------------------------------------------------------------ AEC API
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        self.env.reset(seed=seed, options=options)
        agents = list(self.env.agents)
        self._returns = {a: 0.0 for a in self.env.possible_agents}
        self._cumulative_terms = {a: zero_terms() for a in agents}
        self._cumulative_rewards = {a: 0.0 for a in agents}
        terms = {a: dict(self.env.infos[a].get("reward_terms", zero_terms())) for a in agents}
        self.rewards = {a: self._reward(a, terms[a], float(self.env.rewards[a]), 0.0) for a in agents}
        self.infos = {a: self._info(a, terms[a]) for a in agents}

    def step(self, action: Any) -> None:
        agent = getattr(self.env, "agent_selection", None)
        if agent is None:  # before reset: the wrapped env raises its own EnvStateError
            self.env.step(action)
            return
        if self.env.terminations.get(agent, False) or self.env.truncations.get(agent, False):
            self.env.step(action)
            self._after_dead_step()
            return
        self.env.step(action)
        agents = list(self.env.agents)
        inner_terms = {a: self.env.infos[a].get("reward_terms", zero_terms()) for a in agents}
        terms, deltas = self._step_terms(agent, action, inner_terms)
        self._cumulative_rewards[agent] = 0.0
        self._cumulative_terms[agent] = zero_terms()
        for a in agents:
            self.rewards[a] = self._reward(a, terms[a], float(self.env.rewards[a]), deltas.get(a, 0.0))
            self._cumulative_rewards[a] = self._cumulative_rewards.get(a, 0.0) + self.rewards[a]
            self._cumulative_terms[a] = add_terms(self._cumulative_terms.get(a, zero_terms()), terms[a])
            self._returns[a] = self._returns.get(a, 0.0) + self.rewards[a]
        self.infos = {a: self._info(a, terms[a]) for a in agents}
        if agents and all(self.env.terminations[a] or self.env.truncations[a] for a in agents):
            self._episode_end()

    # ------------------------------------------------------------------ internals
    def _info(self, agent: str, terms: RewardTerms) -> dict[str, Any]:
        info = dict(self.env.infos[agent])
        info["reward_terms"] = dict(terms)
        info["cumulative_reward_terms"] = dict(self._cumulative_terms[agent])
        info.update(self._step_info(agent))
        if isinstance(info.get(EPISODE_KEY), Mapping):
            return episode_info(info, {**info[EPISODE_KEY], "returns": dict(self._returns)})
        return info

    def _after_dead_step(self) -> None:
        """Mirror PettingZoo's dead step: drop agents the wrapped layer removed, clear every reward and its terms."""
        live = set(self.env.agents)
        for table in (self.rewards, self._cumulative_rewards, self.infos, self._cumulative_terms):
            for a in [a for a in table if a not in live]:
                del table[a]
        self.rewards = {a: 0.0 for a in self.env.agents}
        self.infos = dead_step_infos(self.infos)

    def _get_state(self) -> Any:
        return {
            "rewards": self.rewards,
            "_cumulative_rewards": self._cumulative_rewards,
            "infos": self.infos,
            "_cumulative_terms": self._cumulative_terms,
            "_returns": self._returns,
            "extra": self._get_extra_state(),
        }

    def _set_state(self, state: Any) -> None:
        self.rewards = state["rewards"]
        self._cumulative_rewards = state["_cumulative_rewards"]
        self.infos = state["infos"]
        self._cumulative_terms = state["_cumulative_terms"]
        self._returns = state["_returns"]
        self._set_extra_state(state["extra"])
