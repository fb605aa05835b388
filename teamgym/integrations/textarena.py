"""TextArena: a teamgym env where TextArena expects its ``Env`` (``pip install 'teamgym[textarena]'``).

The other direction, TextArena's games as teamgym envs, is :mod:`teamgym.envs.textarena`
(``teamgym.make("textarena/TicTacToe-v0")``).

:class:`TeamgymArenaEnv` is a ``textarena.Env``: TextArena's play loop, its agents and its wrappers drive a teamgym
team env as one of their games. Player ``i`` is the env's ``possible_agents[i]``:

>>> import teamgym
>>> from teamgym.integrations.textarena import TeamgymArenaEnv
>>> env = TeamgymArenaEnv(teamgym.make("plan_path-v0"))  # doctest: +SKIP
>>> env.reset(num_players=2, seed=0)  # doctest: +SKIP
>>> done = False  # doctest: +SKIP
>>> while not done:  # doctest: +SKIP
...     player_id, observation = env.get_observation()
...     done, info = env.step(agents[player_id](observation))
>>> rewards, game_info = env.close()  # doctest: +SKIP

* ``reset(num_players, seed)``: ``num_players`` must be the env's team size; ``seed`` picks the task.
* ``get_observation() -> (player_id, prompt)``: the acting role's prompt text (its chat messages are in
  :attr:`TeamgymArenaEnv.messages`).
* ``step(action) -> (done, info)``: plays the completion (any text: the env's format penalties apply, nothing
  raises); ``done`` once every role is done. ``info`` holds the acting role, its ``reward_terms`` and ``reward``.
* ``close() -> (rewards, game_info)``: each player's episode return (as TextArena's per-player reward) and a
  TextArena-style ``game_info`` (``role``, ``invalid_move`` (always ``False``: a teamgym env penalises instead of
  ending the game), ``turn_count``, ``success``).
"""

from __future__ import annotations

from typing import Any

from pettingzoo import AECEnv

from teamgym.core import EPISODE_KEY
from teamgym.errors import DependencyNotInstalled, EnvStateError, InvalidArgumentError

try:
    import textarena as ta
except ImportError:
    raise DependencyNotInstalled("textarena", "textarena", "teamgym envs under TextArena's API") from None

__all__ = ["TeamgymArenaEnv"]


class TeamgymArenaEnv(ta.Env):
    """A teamgym AEC env behind TextArena's ``Env`` API. See the module docstring.

    Args:
        env: a teamgym env (``teamgym.make(...)``) or a wrapper of one with text actions.
    """

    def __init__(self, env: AECEnv):
        if not isinstance(env, AECEnv):
            raise InvalidArgumentError(
                f"TeamgymArenaEnv(env={type(env).__name__}): expected a PettingZoo AECEnv, e.g. "
                "teamgym.make('plan_path-v0')"
            )
        self.env = env
        self.roles = list(env.possible_agents)
        self._returns: dict[str, float] = {}
        self._turns: dict[str, int] = {}
        self._started = False
        self._last_episode: dict[str, Any] | None = None

    @property
    def messages(self) -> list[dict[str, str]]:
        """The acting role's prompt as chat messages."""
        return list(self.env.infos[self.env.agent_selection].get("messages", []))

    def reset(self, num_players: int, seed: int | None = None) -> None:
        if num_players != len(self.roles):
            raise InvalidArgumentError(
                f"reset(num_players={num_players!r}): this env's team has {len(self.roles)} roles {self.roles}; "
                f"pass num_players={len(self.roles)}"
            )
        self.env.reset(seed=seed)
        self._returns = dict.fromkeys(self.roles, 0.0)
        self._turns = dict.fromkeys(self.roles, 0)
        self._started = True
        self._skip_finished()

    def get_observation(self) -> tuple[int, str]:
        self._require_game("get_observation")
        agent = self.env.agent_selection
        observation = self.env.observe(agent)
        prompt = observation["prompt"] if isinstance(observation, dict) else str(observation)
        return self.roles.index(agent), prompt

    def step(self, action: str) -> tuple[bool, dict[str, Any]]:
        self._require_game("step")
        agent = self.env.agent_selection
        self.env.step(action)
        self._turns[agent] += 1
        for role in self.env.agents:
            self._returns[role] += float(self.env.rewards[role])
        info = {
            "agent": agent,
            "reward": float(self.env.rewards.get(agent, 0.0)),
            "reward_terms": dict(self.env.infos.get(agent, {}).get("reward_terms", {})),
        }
        self._skip_finished()
        return not self.env.agents, info

    def close(self) -> tuple[dict[int, float], dict[int, dict[str, Any]]]:
        if not self._started:
            raise EnvStateError("TeamgymArenaEnv.close() before reset(): reset(num_players, seed) and play first")
        success = bool(self._last_episode.get("success")) if self._last_episode else False
        rewards = {i: self._returns[r] for i, r in enumerate(self.roles)}
        game_info = {
            i: {"role": r, "invalid_move": False, "turn_count": self._turns[r], "success": success}
            for i, r in enumerate(self.roles)
        }
        return rewards, game_info

    # ------------------------------------------------------------------ internals
    def _skip_finished(self) -> None:
        """Play PettingZoo's dead steps (TextArena has none), keeping the last episode summary."""
        self._last_episode = None
        while self.env.agents:
            agent = self.env.agent_selection
            episode = self.env.infos[agent].get(EPISODE_KEY)
            if episode is not None:
                self._last_episode = dict(episode)
            if not (self.env.terminations[agent] or self.env.truncations[agent]):
                return
            self.env.step(None)

    def _require_game(self, method: str) -> None:
        if not self._started:
            raise EnvStateError(f"TeamgymArenaEnv.{method}() before reset(): call reset(num_players, seed) first")
        if not self.env.agents:
            raise EnvStateError(f"TeamgymArenaEnv.{method}() after the game ended: call close(), then reset()")
