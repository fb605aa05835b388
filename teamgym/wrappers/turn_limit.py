"""``TurnLimit``: truncate episodes after fewer rounds than the env's own ``max_turns``.

Every teamgym env takes ``max_turns`` at construction; this wrapper lowers the limit of an env built elsewhere
(a registered default, a shared evaluation env) without rebuilding it, e.g. to train on short episodes first.
Rounds are counted with ``infos[agent]["turn"]``, which every teamgym env reports. When the round index
reaches ``max_turns`` and the episode is still running, every live agent is marked truncated and gets an
``episode`` summary (the base env's, with ``truncated=True`` and ``returns`` summed from the rewards of the
layer below); the wrapped env is left as it is, and the agents then leave by dead steps (``step(None)``)
handled by this wrapper, as in PettingZoo.

>>> from tests.support.relay_env import RelayEnv
>>> env = TurnLimit(RelayEnv(max_turns=3), max_turns=1)
>>> env.reset(seed=0, options={"task_id": "apple"})
>>> env.step("hello")
>>> env.step("no idea")
>>> env.truncations, env.infos["listener"]["teamgym_episode"]["truncated"]
({'speaker': True, 'listener': True}, True)
"""

from __future__ import annotations

from typing import Any

from pettingzoo import AECEnv

from teamgym.core.env import dead_step_infos, episode_info, require_episode
from teamgym.errors import InvalidActionError, InvalidArgumentError
from teamgym.wrappers.base import TextEnvWrapper

__all__ = ["TurnLimit"]

_VIEWS = (
    "agents",
    "rewards",
    "_cumulative_rewards",
    "terminations",
    "truncations",
    "infos",
    "agent_selection",
)


def _view(name: str) -> property:
    """The wrapped layer's attribute until this wrapper truncates the episode, then its own copy."""

    def get(self: TurnLimit) -> Any:
        return self._views[name] if self._views is not None else getattr(self.env, name)

    return property(
        get, doc=f"``{name}``: the wrapped env's, or this wrapper's own once it truncated the episode."
    )


class TurnLimit(TextEnvWrapper):
    """Truncates the episode once ``max_turns`` rounds are over (earlier than the env would).

    Args:
        env: the env (or wrapper) to wrap.
        max_turns: rounds per episode at most (an int >= 1).

    Example:
        >>> from tests.support.tally_env import TallyEnv
        >>> env = TurnLimit(TallyEnv(max_turns=3), max_turns=1)
        >>> env.reset(seed=0, options={"task_id": 0})
        >>> for action in ["1", "1", "1"]:
        ...     env.step(action)
        >>> sorted(a for a in env.agents if env.truncations[a])
        ['alice', 'bob', 'carol']
    """

    agents = _view("agents")
    rewards = _view("rewards")
    _cumulative_rewards = _view("_cumulative_rewards")
    terminations = _view("terminations")
    truncations = _view("truncations")
    infos = _view("infos")
    agent_selection = _view("agent_selection")

    def __init__(self, env: AECEnv, max_turns: int):
        if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
            raise InvalidArgumentError(f"TurnLimit max_turns={max_turns!r}: expected an int >= 1")
        self._views: dict[str, Any] | None = None
        super().__init__(env)
        self.max_turns = max_turns
        self._returns: dict[str, float] = {}

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        self._views = None
        self.env.reset(seed=seed, options=options)
        self._returns = {a: 0.0 for a in self.env.possible_agents}
        if any("turn" not in self.env.infos[a] for a in self.env.agents):
            raise InvalidArgumentError(
                f"TurnLimit needs infos[agent]['turn'], which {type(self.env.unwrapped).__name__} does not "
                "report: wrap a teamgym env (they all do), or pass max_turns to the env itself"
            )

    def step(self, action: Any) -> None:
        if self._views is not None:
            self._dead_step(action)
            return
        agent, live = self._live_selection()
        self.env.step(action)
        if not live:
            return
        agents = list(self.env.agents)
        for a in agents:
            self._returns[a] = self._returns.get(a, 0.0) + float(self.env.rewards[a])
        running = agents and not any(self.env.terminations[a] or self.env.truncations[a] for a in agents)
        if running and self.env.infos[agent]["turn"] >= self.max_turns:
            self._truncate(agents)

    def _truncate(self, agents: list[str]) -> None:
        summary = self._summary()
        self._views = {
            "agents": agents,
            "rewards": dict(self.env.rewards),
            "_cumulative_rewards": dict(self.env._cumulative_rewards),
            "terminations": dict(self.env.terminations),
            "truncations": {a: True for a in agents},
            "infos": {a: episode_info(self.env.infos[a], dict(summary)) for a in agents},
            "agent_selection": self.env.agent_selection,
        }

    def _summary(self) -> dict[str, Any]:
        base = self.unwrapped
        # The base env's summary (task, turns, steps, success, its own extras), read, never changed.
        summary_of = getattr(base, "episode_summary", None)
        summary = dict(summary_of()) if callable(summary_of) else {}
        summary.setdefault("task_id", getattr(base, "task_id", None))
        summary.setdefault("steps", getattr(base, "num_steps", 0))
        summary.setdefault("success", False)
        summary.update(returns=dict(self._returns), truncated=True)
        return summary

    def _dead_step(self, action: Any) -> None:
        """PettingZoo's dead step on this wrapper's views: drop the agent, pick the next, clear rewards and terms."""
        require_episode(self, "step")
        views = self._views
        assert views is not None
        agent = views["agent_selection"]
        if action is not None:
            raise InvalidActionError(
                f"step({action!r:.60}) for {agent!r}, whose episode TurnLimit truncated: pass None for a "
                "finished agent (PettingZoo's convention), or call reset()"
            )
        for name in ("rewards", "_cumulative_rewards", "terminations", "truncations", "infos"):
            views[name].pop(agent, None)
        views["agents"] = [a for a in views["agents"] if a != agent]
        views["rewards"] = {a: 0.0 for a in views["agents"]}
        views["infos"] = dead_step_infos(views["infos"])
        if views["agents"]:
            views["agent_selection"] = views["agents"][0]

    def _get_state(self) -> Any:
        return {"views": self._views, "returns": self._returns}

    def _set_state(self, state: Any) -> None:
        self._views, self._returns = state["views"], state["returns"]
